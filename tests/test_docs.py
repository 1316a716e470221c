"""The front page and docs/: every relative link resolves on GitHub (file and anchor), the front page stays short and
keeps the two commands .ci/run runs."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)


def prose(text: str) -> str:
    """The markdown without code blocks and code spans, where a bracket is not a link."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def github_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lowercase, punctuation dropped, spaces as hyphens, repeats numbered."""
    anchors, seen = set(), {}
    for line in FENCE.sub("", text).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        words = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
        slug = re.sub(r"[^\w\- ]", "", words.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_github_anchors_follow_githubs_rule():
    text = "# Several attempts at once (`--parallel`)\n## The jail's Python environments\n## Notes\n## Notes\n```\n# no\n```\n"
    assert github_anchors(text) == {"several-attempts-at-once---parallel", "the-jails-python-environments", "notes", "notes-1"}


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for text, target in LINK.findall(prose(page.read_text())):
            if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check offline
                continue
            path, _, anchor = target.partition("#")
            goal = (page.parent / path).resolve() if path else page
            if not goal.is_relative_to(ROOT) or not goal.exists():
                broken.append(f"{page.relative_to(ROOT)}: [{text}]({target}): no such file")
            elif anchor and goal.suffix == ".md" and anchor not in github_anchors(goal.read_text()):
                broken.append(f"{page.relative_to(ROOT)}: [{text}]({target}): no such heading")
    assert not broken, "\n".join(broken)


def test_every_doc_is_linked_from_the_front_page():
    front = {target.partition("#")[0] for _, target in LINK.findall(prose((ROOT / "README.md").read_text()))}
    assert {f"docs/{page.name}" for page in PAGES[1:]} <= front


def test_front_page_is_short_and_keeps_the_ci_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 15 * 1024
    code_lines = {line for block in FENCE.findall(readme) for line in block.splitlines()}
    ci_commands = [line for line in (ROOT / ".ci/run").read_text().splitlines() if line.startswith("python3.12 pybench.py")]
    assert ci_commands and all(any(command in line for line in code_lines) for command in ci_commands)
