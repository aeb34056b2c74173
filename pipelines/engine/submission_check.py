"""The validator ``medbench serve`` hands the API: a submission's body -> the model spec medbench will
write for it (``medbench.submissions.Checked``), or ``SubmissionRefused`` naming the field and why.

Decoding is the spec decoder's (strict: an unknown field is an error, named as the spec loader names
keys); then what the Structs cannot say: secrets, URLs and local paths anywhere in the settings, the
slug's namespace, identities taken by another provider, a 40-hex revision for Hub models, the
maintainers' limits and endpoints (``submission_policy``). The spec it builds has the backend's own
typed settings, filled from the few knobs a submitter may choose, so its hash is the hash of the spec
file the sensor will write, and rule one and dedupe compare like with like.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from medbench.canonical import spec_builtins
from medbench.specs import PriceSpec, SpecError, model_spec_type, spec_hash
from pipelines.engine.spec_decoding import explain_validation_error
from medbench.kinds import kind as kind_of
from pipelines.engine.specs import Specs
from pipelines.engine.submission_policy import SubmissionPolicy, check_sandbox_budget
from pipelines.engine.submission_request import (
    ACCEPTED_BACKENDS, REFUSED_BACKENDS, SUBMITTED_SETTINGS, SubmissionRequest, SubmittedOpenAI,
)
from medbench.submissions import Checked, Resources, SubmissionRefused, SubmissionStore

SLUG_RE = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?/[a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9])?$")
MODEL_ID_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$")
HUB_ID_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?/[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$")
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
SECRET_WORDS = frozenset({"token", "secret", "password", "passwd", "authorization", "auth", "credential",
                          "credentials", "bearer", "apikey", "key"})
KEY_WORD_RE = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^(file|data|ftp):", re.I)
PATH_RE = re.compile(r"^(/|\./|\.\./|~)|\\|(^|/)\.\.(/|$)|^[A-Za-z]:[\\/]|^builtin:")
MAX_TASKS = 20


def _refuse(field: str, problem: str) -> SubmissionRefused:
    return SubmissionRefused(field, problem)


def _explain_field(exc: msgspec.ValidationError) -> SubmissionRefused:
    text = explain_validation_error(exc).replace("unknown key", "unknown field").replace("required key", "required field")
    match = re.search(r"`([^`]+)`", text)
    field = match.group(1) if match else ""
    return SubmissionRefused(field, text.replace(f"key `{field}`: ", "").replace(f" `{field}`", ""))


def _secret_key(key: str) -> bool:
    """A key whose words name a secret (``api_key``, ``accessToken``, ``clientSecret``, ``pass``...);
    words, not substrings, so ``max_new_tokens`` (a count) is not taken for a token."""
    words = [word.lower() for word in KEY_WORD_RE.findall(key)]
    return any(word in SECRET_WORDS for word in words) or key.lower() in {"pass", "pw", "pwd", "creds"}


def scan_settings(settings: Any) -> None:
    """Refuse secrets, URLs and local paths anywhere in the settings, naming where (without recursion)."""
    stack: list[tuple[str, Any]] = [("model.settings", settings)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            for key, inner in value.items():
                if _secret_key(str(key)):
                    raise _refuse(f"{where}.{key}", "settings must not carry secrets (an API key or token): "
                                  "a configured endpoint holds its own key")
                stack.append((f"{where}.{key}", inner))
        elif isinstance(value, list):
            stack.extend((where, inner) for inner in value)
        elif isinstance(value, str):
            if URL_RE.search(value):
                if "@" in value.split("://", 1)[-1].split("/", 1)[0]:
                    raise _refuse(where, "URL credentials are refused: settings must not carry secrets")
                raise _refuse(where, "URLs are refused: an openai model names a configured endpoint "
                              "(endpoint = \"<name>\"), a Hub model its id")
            if PATH_RE.search(value):
                raise _refuse(where, "local paths are refused: give a Hugging Face Hub model id (org/name)")


def _at_most(field: str, value: float | None, limit: float) -> None:
    if value is not None and not 0 < value <= limit:
        raise _refuse(field, f"{value} is outside the maintainers' limits (more than 0, at most {limit})")


class SubmissionChecker:
    """Callable(body, owner) -> Checked. Built once by ``medbench serve`` over the loaded specs; reads
    the policy on every call (so a data directory's new endpoint counts at once)."""

    def __init__(self, specs: Specs, store: SubmissionStore, policy: Callable[[], SubmissionPolicy]):
        self.specs, self.store, self.policy = specs, store, policy

    def __call__(self, body: Any, owner: str) -> Checked:
        if not isinstance(body, dict):
            raise _refuse("", "the body must be a JSON object {model, tasks, tier}")
        raw_model = body.get("model")
        if isinstance(raw_model, dict):
            backend = raw_model.get("backend")
            if isinstance(backend, str) and backend in REFUSED_BACKENDS:
                raise _refuse("model.backend", f"{backend} is not accepted from outside: {REFUSED_BACKENDS[backend]}")
            if isinstance(backend, str) and backend not in ACCEPTED_BACKENDS:
                raise _refuse("model.backend", f"invalid value {backend!r} (one of: {', '.join(ACCEPTED_BACKENDS)})")
            if "provider" in raw_model:
                raise _refuse("model.provider", "leave it out: the provider is the token's owner")
            scan_settings(raw_model.get("settings", {}))
        try:  # the body: a field is named where it is (an unknown top-level field is top-level)
            request = msgspec.convert(body, SubmissionRequest, strict=True, str_keys=True)
        except msgspec.ValidationError as exc:
            raise _explain_field(exc) from None
        try:  # the settings, decoded on their own: their fields are named under model.settings
            settings = msgspec.convert(request.model.settings, SUBMITTED_SETTINGS[request.model.backend],
                                       strict=True, str_keys=True)
        except msgspec.ValidationError as exc:
            refused = _explain_field(exc)
            field = f"model.settings.{refused.field}" if refused.field else "model.settings"
            raise SubmissionRefused(field, str(refused).split(": ", 1)[-1]) from None
        policy = self.policy()
        self._identity(request, owner)
        tasks = self._tasks(request.tasks)
        self._limits(request, settings, policy)
        if request.tier == "official" and not (request.package_sha256 and SHA256_RE.fullmatch(request.package_sha256)):
            raise _refuse("package_sha256", "the official tier needs the sha256 (64 hex) of the package you will upload")
        if request.tier == "baseline" and request.package_sha256 is not None:
            raise _refuse("package_sha256", "only the official tier takes a package")
        if request.tier == "official":
            check_sandbox_budget(self.store, policy, owner)
        spec = self._spec(request, settings, owner, tasks, policy)
        res = request.resources
        return Checked(model=msgspec.to_builtins(spec_builtins(spec)), model_spec_hash=spec_hash(spec),
                       tasks=tasks, tier=request.tier, package_sha256=request.package_sha256,
                       resources=Resources(res.pool, res.memory_gib, res.wall_minutes) if res else None,
                       auto_approve=policy.auto_approves(owner))

    def _identity(self, request: SubmissionRequest, owner: str) -> None:
        model = request.model
        if not SLUG_RE.fullmatch(model.slug) or ".." in model.slug:
            raise _refuse("model.slug", "must be <provider>/<name> in lower-case ASCII letters, digits, '.', '_' and '-'")
        if model.slug.split("/", 1)[0] != owner:
            raise SubmissionRefused("model.slug", f"{model.slug!r} is outside your namespace: this token submits "
                                    f"as {owner!r}, so the slug must start with {owner + '/'!r}",
                                    status=403, code="forbidden")
        if not MODEL_ID_RE.fullmatch(model.provider_model_id):
            raise _refuse("model.provider_model_id", "ASCII letters, digits, '.', '_' and '-' only")
        hub = model.backend in ("transformers", "vllm")
        if hub and not COMMIT_RE.fullmatch(model.revision):
            raise _refuse("model.revision", f"{model.revision!r} is not a commit: give the 40-hex commit id of the "
                          "Hub repository (a branch or tag moves; results must name exact weights)")
        if not hub and not VERSION_RE.fullmatch(model.revision):
            raise _refuse("model.revision", "a version: letters, digits, '.', '_' and '-', at most 64")
        for spec in self.specs.models.values():
            if spec.provider != owner and spec.slug == model.slug:
                raise _refuse("model.slug", f"{model.slug!r} is another provider's model")
            if spec.provider != owner and spec.provider_model_id == model.provider_model_id:
                raise _refuse("model.provider_model_id", f"{model.provider_model_id!r} is already {spec.slug}'s id: "
                              "lookups by model id would become ambiguous")
        if self.store.owners_of(slug=model.slug) - {owner}:
            raise _refuse("model.slug", f"{model.slug!r} was submitted by another provider")
        if self.store.owners_of(provider_model_id=model.provider_model_id) - {owner}:
            raise _refuse("model.provider_model_id", f"{model.provider_model_id!r} was submitted by another provider: "
                          "lookups by model id would become ambiguous")

    def _tasks(self, refs: list[str]) -> list[str]:
        if not refs:
            raise _refuse("tasks", "name at least one task (slug@version); GET /v1/tasks lists them")
        if len(refs) > MAX_TASKS:
            raise _refuse("tasks", f"at most {MAX_TASKS} tasks per submission")
        out: list[str] = []
        for ref in refs:
            try:
                task = self.specs.task(ref)
            except KeyError:
                raise _refuse("tasks", f"unknown task {ref!r}; GET /v1/tasks lists them") from None
            if not kind_of(self.specs.family_of(task).kind).parses_replies:
                raise _refuse("tasks", f"{task.ref} is not a text task: submitted models are LLMs, which answer "
                              "tasks whose kind parses text replies (choice)")
            if task.ref not in out:
                out.append(task.ref)
        return sorted(out)

    def _limits(self, request: SubmissionRequest, settings: Any, policy: SubmissionPolicy) -> None:
        lim = policy.limits
        where = "model.settings"
        _at_most(f"{where}.max_new_tokens", getattr(settings, "max_new_tokens", None), lim.max_new_tokens)
        for name, limit in (("batch_size", lim.max_batch_size), ("chunk_size", lim.max_chunk_size),
                            ("concurrency", lim.max_concurrency)):
            _at_most(f"{where}.{name}", getattr(settings, name, None), limit)
        engine = getattr(settings, "engine", None)
        if engine is not None:
            _at_most(f"{where}.engine.tensor_parallel_size", engine.tensor_parallel_size, lim.max_tensor_parallel_size)
            _at_most(f"{where}.engine.pipeline_parallel_size", engine.pipeline_parallel_size, lim.max_pipeline_parallel_size)
            _at_most(f"{where}.engine.max_model_len", engine.max_model_len, lim.max_model_len)
            _at_most(f"{where}.engine.gpu_memory_utilization", engine.gpu_memory_utilization, lim.max_gpu_memory_utilization)
        if hasattr(settings, "model") and not isinstance(settings, SubmittedOpenAI) and not HUB_ID_RE.fullmatch(settings.model):
            raise _refuse(f"{where}.model", "a Hugging Face Hub model id, org/name")
        if isinstance(settings, SubmittedOpenAI):
            endpoint = policy.endpoints.get(settings.endpoint)
            if endpoint is None:
                known = ", ".join(sorted(policy.endpoints)) or "none are configured here"
                raise _refuse(f"{where}.endpoint", f"no endpoint {settings.endpoint!r} (configured: {known})")
            asked = settings.model or request.model.provider_model_id
            if endpoint.models and asked not in endpoint.models:
                raise _refuse(f"{where}.model", f"endpoint {settings.endpoint!r} serves {', '.join(endpoint.models)}")
        res = request.resources
        if res is not None:
            if res.pool not in lim.pools:
                raise _refuse("resources.pool", f"one of {', '.join(lim.pools)}")
            _at_most("resources.memory_gib", res.memory_gib, lim.max_memory_gib)
            _at_most("resources.wall_minutes", res.wall_minutes, lim.max_wall_minutes)

    def _spec(self, request: SubmissionRequest, settings: Any, owner: str, tasks: list[str],
              policy: SubmissionPolicy) -> Any:
        model = request.model
        backend = self.specs.plugins.backends.get(model.backend)
        chosen = msgspec.to_builtins(settings)
        if isinstance(settings, SubmittedOpenAI):
            endpoint = policy.endpoints[settings.endpoint]
            # The endpoint's name, resolved when the model runs (pipelines.backends.endpoints): the spec
            # never holds a URL, and its hash stays when the maintainers move the endpoint.
            chosen = {"model": settings.model, "endpoint": settings.endpoint,
                      "max_new_tokens": settings.max_new_tokens, "concurrency": settings.concurrency}
            price = endpoint.price
        else:
            pool = request.resources.pool if request.resources else ("gpu" if model.backend == "vllm" else "cpu")
            price = PriceSpec(basis="device_hours", key=policy.limits.gpu_price_key if pool == "gpu" else policy.limits.cpu_price_key)
        chosen = {k: v for k, v in chosen.items() if v is not None}
        typ = model_spec_type(backend.name, backend.settings_type)
        try:
            return msgspec.convert({
                "slug": model.slug, "name": model.name, "type": model.type, "provider": owner,
                "provider_model_id": model.provider_model_id, "revision": model.revision,
                "description": model.description or f"Submitted by {owner}.", "backend": model.backend,
                "tasks": tasks, "price": msgspec.to_builtins(price), "settings": chosen,
                "release_date": model.release_date, "knowledge_cutoff": model.knowledge_cutoff,
                "training_data": model.training_data,
            }, typ, strict=False, builtin_types=(type(model.release_date),) if model.release_date else ())
        except (msgspec.ValidationError, SpecError) as exc:
            raise _refuse("model", f"does not make a valid model spec: {exc}") from None
