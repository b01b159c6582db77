"""Write the report blocks (report_doc) as Markdown; figures are linked by relative path."""
import os


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def figure(f, outdir: str) -> str:
    if f.missing:
        return f"**{f.title}: not drawn** — {f.missing}.\n"
    rel, svg = os.path.relpath(f.png, outdir), os.path.relpath(f.svg, outdir)
    return f"![{f.title}]({rel})\n\n*{f.title}.* {f.caption} ([SVG]({svg}))\n"


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
        elif kind == "lead":
            out.append("**Verdict.**\n\n" + "\n".join(f"- **{line}**" for line in block[1]) + "\n")
        elif kind == "warning":
            out.append(f"> **Warning.** {block[1]}\n")
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
            out.append(figure(block[1], outdir))
        elif kind == "figures":
            out += [figure(f, outdir) for f in block[1]]
        else:
            raise ValueError(f"unknown report block {kind!r}")
    return "\n".join(out)
