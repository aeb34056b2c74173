"""A BibTeX entry for one published result, so that citing it is copy and paste.

A result is cited as a ``@misc`` entry pointing at its permanent page; the note names the exact
model revision and task version and carries the dataset's own citation, because docs/api.md asks
users to cite both the dataset and the result.
"""

from __future__ import annotations

from medbench.records import ResultRecord

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def escape(text: str) -> str:
    return "".join(_SPECIAL.get(ch, ch) for ch in text)


def result_bibtex(record: ResultRecord, url: str, dataset_citation: str | None, dataset_doi: str | None) -> str:
    model = record.model
    notes = [
        f"Model {model.slug} (revision {model.revision}) evaluated on task {record.task} "
        f"(spec {record.versions.task_spec_hash[:12]}) on {record.eval_date.isoformat()}, "
        f"run {record.run_id}, {record.tier} tier",
    ]
    if dataset_citation:
        notes.append(f"Dataset: {dataset_citation}" + (f" doi:{dataset_doi}" if dataset_doi else ""))
    if record.demo:
        notes.append("Demo result computed from generated data, not from the real dataset")
    fields = [
        ("title", f"{{{escape(model.name)} on {escape(record.task)}: medbench result {record.run_id}}}"),
        ("author", "{medbench}"),
        ("year", str(record.eval_date.year)),
        ("howpublished", f"\\url{{{url}}}"),
        ("note", escape(". ".join(notes)) + "."),
    ]
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@misc{{medbench-{record.run_id},\n{body}\n}}\n"
