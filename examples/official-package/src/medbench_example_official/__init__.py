"""A worked example of a medbench official-tier package: the authors' own prompt and decoding.

medbench calls ``predict(instances, context)`` inside its sandbox, with no network and no labels.
Here the "model" is a transparent rule so that the example runs anywhere in a second; a real
package loads its weights (from the read-only cache medbench mounts) and decodes its own way.

- Choice tasks (clinicalqa): each instance holds ``question``, ``findings`` and ``options``
  (letter -> text); yield the raw text your model answers. medbench parses it with the task's parser.
- Score tasks (vitaldb-ioh): each instance holds ``map`` (the input window of mean arterial
  pressure, mmHg, ``step_seconds`` apart, null where missing); yield a probability of hypotension.
- Rubric tasks (clinicalqa-open): each instance holds ``prompt`` (the question and findings, no
  options); yield the free-text answer. medbench's judge grades it against the item's rubric.
"""

import math


def _choose(instance):
    """The option with the longest text (a known test-writing bias), answered the authors' way."""
    options = instance["options"]
    letter = max(sorted(options), key=lambda k: len(options[k]))
    return f"정답: {letter}"


def _risk(instance):
    """A logistic map of the last observed mean arterial pressure: lower pressure, higher risk."""
    seen = [v for v in instance["map"] if v is not None]
    last = seen[-1] if seen else 80.0
    return 1.0 / (1.0 + math.exp((last - 70.0) / 5.0))


def _answer(instance):
    """A cautious free-text answer, the same for every question (a real package generates one)."""
    return "추가 병력 청취와 검사 결과를 확인한 뒤 진료 지침에 따라 치료합니다."


def predict(instances, context):
    for instance in instances:
        if context["answer_field"] == "output":
            yield {"instance_id": instance["instance_id"], "output": _choose(instance)}
        elif context["answer_field"] == "answer":
            yield {"instance_id": instance["instance_id"], "answer": _answer(instance)}
        else:
            yield {"instance_id": instance["instance_id"], "score": _risk(instance)}
