"""The website: server-rendered HTML of the same published warehouse the ``/v1`` API serves.

People get leaderboards with intervals drawn as bars, result pages with every number and its
citation, and a paired comparison of two results; agents get a page (and ``/llms.txt``) explaining
rule one with live examples; every read question of the API has a page too, hand-made or derived
from its declaration (``api.site.question_pages``, listed on ``/questions``). The pages are rendered
from the in-memory ``Tables`` of the served version, need no network (no CDN, no web fonts, no script
but a copy button) and link to their JSON twins. ``site_route_handlers`` is what ``api.app.create_app`` mounts by default.
"""

from api.site.routes import site_route_handlers

__all__ = ["site_route_handlers"]
