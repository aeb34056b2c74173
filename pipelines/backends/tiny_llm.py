"""A real, tiny language model built from nothing, for tests and the demo.

Every LLM code path (chat template, batching, token accounting, vLLM's engine and server) must be
exercised without downloading weights, and a hub download is impossible on the test machines. So
the model is *made*: a byte-level BPE tokenizer trained with `tokenizers` on a built-in corpus and
a randomly initialised Llama-architecture network, saved exactly like a hub checkpoint
(safetensors + tokenizer files + chat template). Its answers are noise, which is the point in the
demo: its row shows the honest parse rate of a model that knows nothing.

The build is deterministic (same seed, same bytes), so the weights' content hash serves as the
model's revision, and idempotent (a complete build in the folder is reused).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

BUILTIN_PREFIX = "builtin:"
TINY_LLAMA = "builtin:tiny-llama"

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
VOCAB_SIZE = 768
# head_dim 64: a head size every vLLM attention backend supports, the CPU one included.
ARCHITECTURE = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
}
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
# Files whose bytes decide what the model generates; their hash is the revision.
REVISION_FILES = ("model.safetensors", "tokenizer.json")
_MARKER = "medbench-tiny-llm.json"
_BUILDER_VERSION = 1

_CORPUS_LINES = (
    "다음은 한국 의사 국가시험 수준의 임상 문제입니다. 보기 중 가장 적절한 답을 하나 고르세요.",
    "문제: 55세 남자가 흉통으로 응급실에 왔다. 가장 적절한 다음 검사는?",
    "검사 소견: 혈압 150/90 mmHg, 맥박 110회/분, 체온 37.8°C, 산소포화도 94%",
    "보기: A. 심전도 B. 흉부 X선 C. 복부 초음파 D. 뇌 MRI E. 요검사",
    '간단히 풀이한 뒤, 마지막 줄에 "정답: X" 형식으로 답하세요. X는 A, B, C, D, E 중 하나입니다.',
    "정답: A",
    "정답: B",
    "정답: C",
    "정답: D",
    "정답: E",
    "주호소는 발열, 기침, 호흡곤란, 두통, 복통, 구토, 설사, 어지럼증이다.",
    "진단은 폐렴, 심근경색, 뇌졸중, 당뇨병성 케톤산증, 급성 충수염, 패혈증 중 하나이다.",
    "치료로 항생제, 수액, 인슐린, 혈전용해제, 수술, 경과 관찰을 고려한다.",
    "The patient is a 62-year-old woman with chest pain, fever and shortness of breath.",
    "Blood pressure 90/60 mmHg, heart rate 120 beats per minute, lactate 4.1 mmol/L.",
    "The most likely diagnosis is sepsis; start antibiotics and fluids within one hour.",
    "Answer: A. Answer: B. Answer: C. Answer: D. Answer: E.",
    "Mean arterial pressure below 65 mmHg for one minute is intraoperative hypotension.",
    "Electrocardiogram shows ST elevation in leads II, III and aVF.",
    "Hemoglobin 9.8 g/dL, white blood cells 15,000/μL, platelets 120,000/μL, CRP 12 mg/dL.",
    "① ② ③ ④ ⑤ 1번 2번 3번 4번 5번 (A) (B) (C) [D] 'E' **A**",
    "<think>환자의 증상과 검사 소견을 종합하면 답은 B이다.</think>",
)


def tiny_llm_corpus() -> str:
    """The fixed training text of the tokenizer (part of the build, so part of the revision)."""
    return "\n".join(_CORPUS_LINES * 8)


def build_tiny_llm(out_dir: Path, seed: int = 0) -> Path:
    """Build (or reuse) the tiny model in ``out_dir`` and return that folder.

    A build is written to a temporary sibling folder and moved into place in one rename, so a
    killed build or two concurrent builders never leave a half-written model behind.
    """
    out_dir = Path(out_dir)
    if _is_complete(out_dir, seed):
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        _write_build(staging, seed)
        if out_dir.exists():
            if _is_complete(out_dir, seed):
                return out_dir
            shutil.rmtree(out_dir)  # an older or foreign build: replace it
        try:
            os.rename(staging, out_dir)
        except OSError:
            if not _is_complete(out_dir, seed):  # lost a race to a builder that wrote something else
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def tiny_llm_revision(path: Path) -> str:
    """sha256 (first 16 hex) of the weights and tokenizer bytes: the revision of a built model."""
    digest = hashlib.sha256()
    for name in REVISION_FILES:
        digest.update(name.encode() + b"\0")
        digest.update((Path(path) / name).read_bytes())
    return digest.hexdigest()[:16]


def resolve_model_path(model: str, models_dir: Path, seed: int = 0) -> str:
    """``builtin:tiny-llama`` becomes the folder of a (re)built tiny model; anything else is returned
    unchanged (a hub id or a local path the backend loads itself)."""
    if not model.startswith(BUILTIN_PREFIX):
        return model
    if model != TINY_LLAMA:
        raise ValueError(f"unknown builtin model {model!r}; known: {TINY_LLAMA}")
    return str(build_tiny_llm(Path(models_dir) / f"tiny-llama-seed{seed}", seed=seed))


# --------------------------------------------------------------------------- building


def _is_complete(out_dir: Path, seed: int) -> bool:
    marker = out_dir / _MARKER
    if not marker.is_file():
        return False
    try:
        meta = json.loads(marker.read_text())
    except ValueError:
        return False
    if meta.get("seed") != seed or meta.get("builder_version") != _BUILDER_VERSION:
        return False
    try:
        return tiny_llm_revision(out_dir) == meta.get("revision")
    except OSError:
        return False


def _write_build(folder: Path, seed: int) -> None:
    tokenizer = _train_tokenizer()
    _write_tokenizer(folder, tokenizer)
    _write_model(folder, seed, tokenizer)
    meta = {"seed": seed, "builder_version": _BUILDER_VERSION, "revision": tiny_llm_revision(folder)}
    (folder / _MARKER).write_text(json.dumps(meta, sort_keys=True) + "\n")


def _train_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=[BOS, EOS, PAD, *ROLE_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator([tiny_llm_corpus()], trainer=trainer)
    return tokenizer


def _write_tokenizer(folder: Path, tokenizer) -> None:
    """tokenizer.json plus a hand-written tokenizer_config.json, in the plain form every loader
    (transformers 4 and 5, vLLM) reads, with the chat template inside it."""
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "additional_special_tokens": list(ROLE_TOKENS),
        "model_max_length": ARCHITECTURE["max_position_embeddings"],
        "padding_side": "left",
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


def _write_model(folder: Path, seed: int, tokenizer) -> None:
    """Seeded random Llama weights, written with safetensors directly (no library-version-dependent
    serialisation in between, so equal seeds give equal bytes)."""
    import torch
    from safetensors.torch import save_file
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    ids = {name: tokenizer.token_to_id(tok) for name, tok in (("bos", BOS), ("eos", EOS), ("pad", PAD))}
    config = LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(with_added_tokens=True),
        bos_token_id=ids["bos"],
        eos_token_id=ids["eos"],
        pad_token_id=ids["pad"],
        dtype="float32",
        architectures=["LlamaForCausalLM"],
        **ARCHITECTURE,
    )
    with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's RNG
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config).to(torch.float32)
    tensors = {name: t.detach().contiguous() for name, t in sorted(model.state_dict().items())}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(folder)
    GenerationConfig(
        bos_token_id=ids["bos"], eos_token_id=ids["eos"], pad_token_id=ids["pad"], do_sample=False
    ).save_pretrained(folder)
