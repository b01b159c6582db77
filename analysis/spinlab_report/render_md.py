"""Write the report blocks (report_doc) as Markdown; figures are linked by relative path."""
import os


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(doc: list, outdir: str) -> str:
    out = []
    for block in doc:
        kind = block[0]
        if kind == "h1":
            out.append(f"# {block[1]}\n")
        elif kind == "h2":
            out.append(f"## {block[1]}\n")
        elif kind == "p":
            out.append(block[1] + "\n")
        elif kind == "list":
            out.append("\n".join(f"- {item}" for item in block[1]) + "\n")
        elif kind == "pre":
            out.append("```\n" + block[1].rstrip("\n") + "\n```\n")
        elif kind == "table":
            head, rows = block[1], block[2]
            lines = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
            lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
            out.append("\n".join(lines) + "\n")
        elif kind == "figure":
            f = block[1]
            if f.missing:
                out.append(f"**{f.title}: not drawn** — {f.missing}.\n")
            else:
                rel = os.path.relpath(f.png, outdir)
                svg = os.path.relpath(f.svg, outdir)
                out.append(f"![{f.title}]({rel})\n\n*{f.title}.* {f.caption} ([SVG]({svg}))\n")
        else:
            raise ValueError(f"unknown report block {kind!r}")
    return "\n".join(out)
