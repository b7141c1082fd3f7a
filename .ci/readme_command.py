"""Print the shell command README.md marks with `<!-- command: NAME -->`, so CI runs it as written."""

import re
import sys
from pathlib import Path

name = sys.argv[1]
readme = Path(__file__).resolve().parent.parent / "README.md"
pattern = rf"<!-- command: {re.escape(name)} -->\s*```(?:sh|bash|console)?\n(.*?)\n```"
match = re.search(pattern, readme.read_text(encoding="utf-8"), re.DOTALL)
if match is None:
    sys.exit(f"README.md has no block marked <!-- command: {name} -->")
print(match.group(1).strip())
