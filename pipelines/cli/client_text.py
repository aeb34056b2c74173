"""Plain-text renderings of the API's JSON objects for the terminal (``--json`` prints the JSON itself).

Shared by the client commands and by ``medbench eval`` / ``reproduce``, so a result reads the same
whichever command printed it. Demo results are marked as demo wherever they are shown.
"""

from __future__ import annotations

from typing import Any


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _metric(m: dict[str, Any], digits: int = 4) -> str:
    return f"{m['name']} {_num(m['value'], digits)} [{_num(m['ci_low'], digits)}, {_num(m['ci_high'], digits)}]"


def _demo(obj: dict[str, Any]) -> str:
    return " (DEMO DATA)" if obj.get("demo") else ""


def table(headers: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def tasks(body: dict[str, Any]) -> str:
    rows = [[t["ref"] if "ref" in t else f"{t['slug']}@{t['version']}", t["kind"], t["primary_metric"],
             str(t["n_results"]), "yes" if t["preview"] else "no", t.get("title", "")] for t in body["tasks"]]
    return table(["task", "kind", "metric", "results", "preview", "title"], rows, right={3})


def datasets(body: dict[str, Any]) -> str:
    out = []
    for d in body["datasets"]:
        out += [f"{d['slug']}: {d['name']}", f"  license  {d['license']} ({d['license_url']})",
                f"  public   since {d['public_since']}", f"  cite     {d['citation']} doi:{d['doi']}"]
    return "\n".join(out)


def leaderboard(body: dict[str, Any]) -> str:
    rows = body["rows"]
    head = f"{body['task']} ranked by {body['metric']}" + (_demo(rows[0]) if rows else "")
    if not rows:
        return head + "\n(no results)"
    lines = [[str(r["rank"]), f"{r['rank_low']}-{r['rank_high']}", r["model"]["slug"], r["model"]["type"],
              _num(r["metric"]["value"]), f"[{_num(r['metric']['ci_low'])}, {_num(r['metric']['ci_high'])}]",
              str(r["n"]), _num(r["parse_rate"], 3), f"{r['cost_usd']:.4f}", r["run_id"]] for r in rows]
    # ranks: the 95% simultaneous rank set, as the site shows it (docs/concepts.md)
    return head + "\n" + table(["#", "ranks", "model", "type", body["metric"], "95% CI", "n", "parsed", "cost_usd",
                                "run_id"], lines, right={0, 4, 6, 7, 8})


def result(r: dict[str, Any], bibtex: bool = True) -> str:
    model = r["model"]
    lines = [
        f"{model['name']} ({model['slug']}) on {r['task']}{_demo(r)}",
        f"  run {r['run_id']}  {r['url']}",
        f"  {_metric(r['metric'])}  n={r['n']}" + (f"  parse_rate={_num(r['parse_rate'], 3)}" if r["parse_rate"] is not None else ""),
        f"  tier {r['tier']}, evaluated {r['eval_date']}, cost ${r['cost_usd']:.4f}, contamination "
        + (r.get("contamination_status") or {True: "possible", False: "no", None: "unknown"}[r["contamination"]])
        + (f" ({r['contamination_basis']})" if r.get("contamination_basis") else ""),
    ]
    if r.get("withdrawn"):
        lines.append(f"  WITHDRAWN on {r['withdrawn']['date']}: {r['withdrawn']['reason']}")
    if r.get("superseded_by"):
        lines.append(f"  superseded by {r['superseded_by']}")
    lines.append("  metrics:")
    lines += [f"    {_metric(m)}" for m in r["metrics"]]
    v = r["versions"]
    lines += [
        (f"  versions: task spec {v['task_spec_hash'][:16]}, model spec {v['model_spec_hash'][:16]}, snapshot "
         f"{v['dataset_snapshot']}, parser {v['parser'] or '-'}, code {v['code_revision']}"),
        f"  usage: {_usage(r['usage'])}",
        f"  predictions: {r['predictions_url']}",
        f"  sha256 {r['predictions_sha256']}",
    ]
    if bibtex:
        lines += ["", r["bibtex"].rstrip()]
    return "\n".join(lines)


def _usage(u: dict[str, Any]) -> str:
    """Tokens when the run counted them (a score task or a local model has none: no "None" printed)."""
    counted = [f"{u[k]} {k.split('_')[0]}" for k in ("prompt_tokens", "completion_tokens") if u.get(k) is not None]
    tokens = f"tokens {', '.join(counted)}, " if counted else ""
    return f"{tokens}{u['wall_seconds']} s on {u['hardware']}"


def withdrawn(r: dict[str, Any]) -> str:
    """The one line for a pair whose result was withdrawn (``medbench lookup`` and ``eval``, exit 1)."""
    w = r.get("withdrawn") or {}
    return (f"{r['model']['slug']} on {r['task']}: result {r['run_id']} was withdrawn on {w.get('date')}: "
            f"{w.get('reason')} (it is not current, and not evaluated again)")


def stats(body: dict[str, Any]) -> str:
    keys = ["datasets", "tasks", "models", "results", "total_cost_usd", "reuses", "warehouse_version"]
    lines = [f"{k:18} {body[k]}" for k in keys if k in body]
    if body.get("demo"):
        lines.append("(DEMO DATA: results computed from generated data)")
    return "\n".join(lines)


def comparison(c: dict[str, Any], a: dict[str, Any] | None = None, b: dict[str, Any] | None = None) -> str:
    def who(run: str, r: dict[str, Any] | None) -> str:
        return f"{r['model']['slug']} ({run})" if r else run

    if c["ci_low"] > 0:
        verdict = "a scores higher: the 95% interval of the difference lies above 0"
    elif c["ci_high"] < 0:
        verdict = "b scores higher: the 95% interval of the difference lies below 0"
    else:
        verdict = "no clear difference: the 95% interval of the difference includes 0"
    lines = [
        f"{c['task']}, {c['metric']} on {c['n_shared']} shared items",
        f"  a  {who(c['a'], a)}  {_num(c.get('value_a'))}",
        f"  b  {who(c['b'], b)}  {_num(c.get('value_b'))}",
        (f"  difference (a - b) {c['difference']:+.4f}  95% CI [{c['ci_low']:+.4f}, {c['ci_high']:+.4f}]  "
         + (f"p <= {c['p_value']:.4g}" if c.get("p_at_floor") else f"p = {c['p_value']:.4g}")),
    ]
    if c.get("a_only_correct") is not None:
        lines.append(f"  discordant pairs: a right / b wrong {c['a_only_correct']}, a wrong / b right {c['b_only_correct']}")
    lines += [f"  {verdict}", f"  method: {c['method']}"]
    return "\n".join(lines)


def models(body: dict[str, Any]) -> str:
    """One line per model: slug, type, provider model id, and the task versions it has results for."""
    if not body["models"]:
        return "no model matches"
    lines = []
    for m in body["models"]:
        tasks = ", ".join(f"{e['task']} ({e['run_id']})" for e in m["evaluations"]) or "not evaluated"
        lines.append(f"{m['slug']}  [{m['type']}]  id {m['provider_model_id'] or '-'}  {tasks}")
    shown = body["offset"] + len(body["models"])
    if shown < body["total"]:
        lines.append(f"... {body['total'] - shown} more (--offset {shown})")
    return "\n".join(lines)
