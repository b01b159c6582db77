"""Write the report blocks (report_doc) as one self-contained HTML file.

Figures are embedded as base64 PNG data: URIs, so the file can be mailed or opened offline;
nothing is fetched from anywhere.
"""
import base64
import html

STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:72em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:0.6em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
th{background:#f3f3f3}pre{background:#f7f7f7;padding:0.6em;overflow-x:auto}
figure{margin:1em 0}img{max-width:100%}figcaption{font-size:90%;color:#444}
.missing{color:#a00;font-weight:600}.row{display:flex;gap:1em;align-items:flex-start}.row figure{flex:1;min-width:0}
.verdict{font-size:16px;background:#f4f8ff;border-left:4px solid #1f77b4;padding:0.5em 0.8em;margin-top:0.4em}
.warning{background:#fff6e5;border-left:4px solid #d08000;padding:0.3em 0.8em}"""


def png_data_uri(path: str) -> str:
    with open(path, "rb") as f:
        return "data:image/png;base64," + base64.b64encode(f.read()).decode("ascii")


def figure(f) -> str:
    e = html.escape
    if f.missing:
        return f"<p class=\"missing\">{e(f.title)}: not drawn — {e(f.missing)}.</p>"
    return (f"<figure id=\"{e(f.name)}\"><img alt=\"{e(f.title)}\" src=\"{png_data_uri(f.png)}\">"
            f"<figcaption><b>{e(f.title)}.</b> {e(f.caption)}</figcaption></figure>")


def render(doc: list) -> str:
    e = html.escape
    title = next((b[1] for b in doc if b[0] == "h1"), "spinlab report")
    out = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{e(title)}</title>"
           f"<style>{STYLE}</style></head><body>"]
    for block in doc:
        kind = block[0]
        if kind in ("h1", "h2"):
            out.append(f"<{kind}>{e(block[1])}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{e(block[1])}</p>")
        elif kind == "lead":
            out.append("<div class=\"verdict\" id=\"verdict\"><b>Verdict.</b><ul>" +
                       "".join(f"<li><b>{e(line)}</b></li>" for line in block[1]) + "</ul></div>")
        elif kind == "warning":
            out.append(f"<p class=\"warning\"><b>Warning.</b> {e(block[1])}</p>")
        elif kind == "list":
            out.append("<ul>" + "".join(f"<li>{e(i)}</li>" for i in block[1]) + "</ul>")
        elif kind == "pre":
            out.append(f"<pre>{e(block[1])}</pre>")
        elif kind == "table":
            head = "".join(f"<th>{e(str(h))}</th>" for h in block[1])
            rows = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in block[2])
            out.append(f"<table><tr>{head}</tr>{rows}</table>")
        elif kind == "figure":
            out.append(figure(block[1]))
        elif kind == "figures":
            out.append("<div class=\"row\">" + "".join(figure(f) for f in block[1]) + "</div>")
        else:
            raise ValueError(f"unknown report block {kind!r}")
    out.append("</body></html>\n")
    return "\n".join(out)
