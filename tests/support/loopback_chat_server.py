"""The loopback chat server lives in ``bench/_chat_server.py`` (the orchestration benchmark uses it too)."""

from bench._chat_server import ID_PATTERN, LoopbackChatServer, Reply, Request, completion  # noqa: F401
