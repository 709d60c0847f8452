"""The docs cannot rot: every command shown in README.md and docs/*.md parses, every repository
path they name exists, and every option they name is real.

Checked without running anything and without TensorFlow:
- `python -m experiments ...` is dry-parsed by the CLI's own `build_parser()`, and every
  `--set SECTION.FIELD` must name a field of the config tree;
- `scripts/*.sh` is followed to the command it forwards to (its `exec` line) and parsed there;
- other repository scripts and modules (`python benchmarks/x.py`, `python -m replication.launch`)
  must exist and accept every flag used, read from their `add_argument` calls;
- results numbers are generated blocks (experiments/reporting/build_docs.py), checked by
  tests/experiments/reporting/test_docs_blocks.py.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import glob
import io
import pathlib
import re
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

SHELL_LANGS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`([^`]+)`")  # inline code may wrap onto the next line
INLINE_COMMANDS = ("python -m ", "python3 -m ", "python benchmarks/", "scripts/", "bash scripts/")
NUM = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+-]?\d+)?"
TEST_SH_TIERS = tuple(re.findall(  # scripts/test.sh's options: the labels of its `case`
    r"^\s+(--\w+)\)", (ROOT / "scripts" / "test.sh").read_text(), re.M))


# ---- extraction ----------------------------------------------------------------------------

def _without_fences(text: str) -> str:
    return FENCE.sub("", text)


def shell_commands(text: str) -> list[list[str]]:
    """The commands of a doc: lines of shell code blocks, and inline code that runs the suite."""
    lines = []
    for lang, body in FENCE.findall(text):
        if lang in SHELL_LANGS:
            lines += re.sub(r"\\\n", " ", body).splitlines()
    lines += [" ".join(code.split()) for code in INLINE.findall(_without_fences(text))
              if code.startswith(INLINE_COMMANDS)]
    commands = []
    for line in lines:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        command = []
        for token in [*lexer, ";"]:
            if token in (";", "&&", "||", "|", "&"):
                if command:
                    commands.append(command)
                command = []
            else:
                command.append(token)
    return commands


def _top_level_names() -> set[str]:
    ignored = {".git", ".venv", "runs", "__pycache__", ".pytest_cache", ".ruff_cache"}
    return {p.name for p in ROOT.iterdir()
            if p.name not in ignored and not p.name.endswith(".egg-info")}


PATH_IN_CODE = re.compile(r"(?<![\w./:-])((?:\./)?[\w.-]+(?:/[\w.*|-]*)+)")
DOTTED = re.compile(r"(?<![\w./-])((?:sngan|replication|experiments|common)(?:\.[A-Za-z_]\w*)+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def named_paths(text: str) -> list[str]:
    """Repository paths a doc names in code (blocks and inline), relative to the root."""
    code = [body for _, body in FENCE.findall(text)] + INLINE.findall(_without_fences(text))
    top = _top_level_names()
    found = []
    for chunk in code:
        for path in PATH_IN_CODE.findall(chunk):
            path = path.removeprefix("./").rstrip(".,:")
            if path.split("/")[0] in top:
                found.append(path)
    return found


def _alternatives(path: str) -> list[str]:
    """`report/table.csv|tex` -> the two files it names."""
    head, _, last = path.rpartition("/")
    first, *others = last.split("|")
    stem = first.rsplit(".", 1)[0]
    names = [first] + [f"{stem}.{ext}" for ext in others]
    return [f"{head}/{name}" if head else name for name in names]


def path_errors(text: str, doc_dir: pathlib.Path) -> list[str]:
    errors = []
    for path in named_paths(text):
        for one in _alternatives(path):
            if not glob.glob(str(ROOT / one)):
                errors.append(f"names {one}, which does not exist")
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (doc_dir / target.split("#")[0]).exists():
            errors.append(f"links to {target}, which does not exist")
    for dotted in DOTTED.findall(text):
        errors += _dotted_name_errors(dotted)
    return errors


def _dotted_name_errors(dotted: str) -> list[str]:
    """`sngan.layers.ImageConv2D`: a module file, then a name defined or re-exported there."""
    parts = dotted.split(".")
    path = ROOT / parts[0]
    for i, part in enumerate(parts[1:], start=1):
        if (path / part).is_dir():
            path = path / part
            continue
        if (path / f"{part}.py").exists():
            path = path / f"{part}.py"
            continue
        source = path / "__init__.py" if path.is_dir() else path
        if source.exists() and re.search(rf"\b{part}\b", source.read_text()):
            return []  # an attribute of the module: deeper parts are its attributes
        return [f"names {dotted}, but {'.'.join(parts[:i + 1])} is neither a module nor a "
                f"name in {source.relative_to(ROOT)}"]
    return []


# ---- commands ------------------------------------------------------------------------------

def _is_python(token: str) -> bool:
    return re.fullmatch(r"(?:\S*/)?python3?(?:\.\d+)?", token) is not None


def _config_fields() -> dict[str, set[str]]:
    from experiments import config as config_lib
    return {f.name: {g.name for g in dataclasses.fields(f.default_factory())}
            for f in dataclasses.fields(config_lib.RunConfig)
            if dataclasses.is_dataclass(f.default_factory) if f.default_factory
            is not dataclasses.MISSING}


def _parse(args: list[str]):
    """(namespace or None, stdout, stderr) of the CLI's own parser on `args`; runs nothing."""
    from experiments import cli
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            return cli.build_parser().parse_args(args), stdout.getvalue(), ""
    except SystemExit as e:
        failed = e.code not in (0, None)  # 0: --help
        return None, stdout.getvalue(), stderr.getvalue() if failed else ""


def _options_in_help(help_text: str) -> set[str]:
    """The option strings a (sub)command's --help lists, one option line each."""
    return {flag for line in help_text.splitlines() if line.strip().startswith("-")
            for flag in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line)}


def _experiments_errors(args: list[str]) -> list[str]:
    if not args:
        return []  # the command's name in prose, not a command
    parsed, _, failure = _parse(args)
    if failure:
        message = failure.strip().splitlines()
        return [f"`python -m experiments {shlex.join(args)}` does not parse: {message[-1]}"]
    if parsed is None:
        return []  # --help
    # argparse also takes unambiguous abbreviations (`--batch-size` for `--batch-sizes`):
    # a doc must show the option's full name.
    _, help_text, _ = _parse([args[0], "--help"])
    listed = _options_in_help(help_text)
    errors = [f"`python -m experiments {shlex.join(args)}`: {arg.split('=')[0]} is not an "
              f"option of {args[0]} (abbreviated?)"
              for arg in args[1:] if arg.startswith("--") and arg != "--"
              and arg.split("=")[0] not in listed]
    fields = _config_fields()
    for item in getattr(parsed, "set", None) or []:
        key = item.split("=", 1)[0]
        section, _, name = key.partition(".")
        if name not in fields.get(section, ()):
            errors.append(f"`--set {item}`: {key} is not a config field")
    return errors


def _all_known_options() -> set[str]:
    """Every option of every `python -m experiments` subcommand and of the repository's other
    entry points (scripts/test.sh's --fast/--slow/--long/--all, benchmarks/, replication.launch)."""
    _, top_help, _ = _parse(["--help"])
    commands = re.search(r"\{([\w,-]+)\}", top_help).group(1).split(",")
    known = {*TEST_SH_TIERS, "--help"}
    for command in commands:
        known |= _options_in_help(_parse([command, "--help"])[1])
    for path in [*ROOT.glob("benchmarks/*.py"), ROOT / "replication" / "launch.py"]:
        known |= _argparse_flags(path) or set()
    return known


def inline_option_errors(text: str) -> list[str]:
    """Options named on their own in prose (`--n-dis 5`, `--set model.g_ch=64`) must exist."""
    spans = [" ".join(code.split()) for code in INLINE.findall(_without_fences(text))]
    spans = [span for span in spans if re.match(r"--[A-Za-z]", span)]
    if not spans:
        return []
    known, fields, errors = _all_known_options(), _config_fields(), []
    for span in spans:
        tokens = span.split()
        flag = tokens[0].split("=")[0]
        if flag not in known:
            errors.append(f"`{span}`: no entry point has the option {flag}")
        if flag == "--set" and len(tokens) > 1:
            section, _, name = tokens[1].split("=")[0].partition(".")
            if name not in fields.get(section, ()) and name not in ("...", "FIELD"):
                errors.append(f"`{span}`: {section}.{name} is not a config field")
    return errors


def _argparse_flags(path: pathlib.Path) -> set[str] | None:
    """The option strings of every add_argument call in a script (None: it has none)."""
    flags = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            flags |= {a.value for a in node.args
                      if isinstance(a, ast.Constant) and str(a.value).startswith("-")}
    return flags or None


def _python_script_errors(path: pathlib.Path, args: list[str], shown: str) -> list[str]:
    if not path.exists():
        return [f"`{shown}`: {path.relative_to(ROOT)} does not exist"]
    own, rest = (args[:args.index("--")], args[args.index("--") + 1:]) if "--" in args \
        else (args, [])
    flags = _argparse_flags(path) or set()
    errors = [f"`{shown}`: {path.relative_to(ROOT)} has no option {arg.split('=')[0]}"
              for arg in own if arg.startswith("-") and not re.fullmatch(NUM, arg)
              and arg.split("=")[0] not in flags]
    return errors + (command_errors(rest) if rest else [])


def _script_forwarding(path: pathlib.Path) -> list[str] | None:
    """The command a shell entry point `exec`s with "$@", its own fixed arguments included."""
    text = re.sub(r"\\\n", " ", path.read_text())
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("exec ") and '"$@"' in line:
            tokens = shlex.split(line.replace('"$@"', "__ARGS__"))[1:]
            tokens = ["python" if "/bin/python" in t else t for t in tokens]
            return tokens[:tokens.index("__ARGS__")]
    return None


def _test_sh_errors(args: list[str]) -> list[str]:
    """scripts/test.sh [--fast | --slow | --long | --all] [-- PYTEST ARGS]: the script parses
    these itself."""
    rest = args[1:] if args[:1] and args[0] in TEST_SH_TIERS else args
    if rest and rest[0] != "--":
        return [f"`scripts/test.sh {shlex.join(args)}`: takes only one of "
                f"{', '.join(TEST_SH_TIERS)} and -- PYTEST_ARGS"]
    return [f"`scripts/test.sh`: {a} does not exist" for a in rest[1:]
            if a.startswith("tests/") and not (ROOT / a.split("::")[0]).exists()]


# Entry points that take their arguments themselves: the argument lists they accept. (The
# cluster examples are submitted as they are; tests/replication/test_cluster_examples.py
# dry-parses the commands inside them.)
SCRIPTS_WITHOUT_FORWARDING = {
    "scripts/setup.sh": [[]], "scripts/render_notebook.sh": [[]],
    "scripts/study_v5.sh": [[], ["--dry-run"]], "scripts/lock.sh": [[], ["--upgrade"]],
    "scripts/slurm_sweep.sbatch": [[]], "scripts/k8s/tfjob_sweep.yaml": [[]],
}


def command_errors(tokens: list[str]) -> list[str]:
    """Why a command shown in the docs would not run as shown (empty: it parses)."""
    while tokens and re.fullmatch(r"[A-Za-z_]\w*=\S*", tokens[0]):  # VAR=value prefixes
        tokens = tokens[1:]
    if tokens[:1] == ["bash"]:
        tokens = tokens[1:]
    if not tokens:
        return []
    shown = shlex.join(tokens)
    if _is_python(tokens[0]) and len(tokens) > 2 and tokens[1] == "-m":
        module, args = tokens[2], tokens[3:]
        if module == "experiments":
            return _experiments_errors(args)
        if module.split(".")[0] in {"experiments", "sngan", "replication", "common",
                                    "benchmarks"}:
            return _python_script_errors(ROOT / (module.replace(".", "/") + ".py"), args, shown)
        return []  # another package's module (pytest, pip): not ours to check
    if _is_python(tokens[0]) and len(tokens) > 1 and tokens[1].endswith(".py"):
        if tokens[1].split("/")[0] not in _top_level_names():
            return []  # the reader's own script, as in an example
        return _python_script_errors(ROOT / tokens[1], tokens[2:], shown)
    script = tokens[0].removeprefix("./")
    if script.startswith("scripts/"):
        path = ROOT / script
        if not path.exists():
            return [f"`{shown}`: {script} does not exist"]
        if script == "scripts/test.sh":
            return _test_sh_errors(tokens[1:])
        if script in SCRIPTS_WITHOUT_FORWARDING:
            accepted = SCRIPTS_WITHOUT_FORWARDING[script]
            return [] if tokens[1:] in accepted else [f"`{shown}`: {script} takes {accepted}"]
        target = _script_forwarding(path)
        if target is None:
            return [f"`{shown}`: this test does not know how {script} takes arguments "
                    "(no `exec ... \"$@\"` line): add it to SCRIPTS_WITHOUT_FORWARDING"]
        return [f"`{shown}` runs {error}" for error in command_errors(target + tokens[1:])]
    return []  # an outside tool (apt-get, tfds, pip)


# ---- the tests -----------------------------------------------------------------------------

@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_shown_parses_and_every_option_and_path_named_exists(doc):
    text = doc.read_text()
    errors = [e for command in shell_commands(text) for e in command_errors(command)]
    errors += inline_option_errors(text) + path_errors(text, doc.parent)
    assert not errors, "\n".join(errors)


def test_readme_is_a_front_door_with_generated_results():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 12 * 1024
    assert "<!-- results: batch_table_short -->" in text and "<!-- results: answer_steps" in text
    assert any(c[:3] == ["python", "-m", "experiments"] for c in shell_commands(text))
    assert any(c[:1] == ["scripts/sweep_batch_sizes.sh"] for c in shell_commands(text))


# The checker itself, on doctored docs: each must be caught.

def test_shell_commands_are_extracted_from_blocks_continuations_and_inline_code():
    text = ("Run `python -m experiments report DIR` or:\n\n```bash\n"
            "scripts/sweep_batch_sizes.sh --seeds 0,1 \\\n    --out x   # a comment\n"
            "FOO=1 python -m experiments train --steps 5 && echo done\n```\n"
            "```python\nimport os\n```\n")
    assert shell_commands(text) == [
        ["scripts/sweep_batch_sizes.sh", "--seeds", "0,1", "--out", "x"],
        ["FOO=1", "python", "-m", "experiments", "train", "--steps", "5"], ["echo", "done"],
        ["python", "-m", "experiments", "report", "DIR"]]


@pytest.mark.parametrize("command", [
    "python -m experiments sweep --batch-size 64",          # sweep takes --batch-sizes
    "python -m experiments train --batch-sizes 64",         # train takes --batch-size
    "python -m experiments evaluate --run X --bn-mode averaged",   # not a BN mode
    "python -m experiments sweep --set model.no_such_field=1",
    "python -m experiments sweep --set nosection.g_ch=1",
    "python -m experiments no-such-command",
    "scripts/sweep_batch_sizes.sh --no-such-flag",           # followed to `experiments sweep`
    "scripts/reference_run.sh --batch-size 8",               # followed through two scripts
    "scripts/train_classifier.sh --steps 3",                 # `train-classifier` has --epochs
    "scripts/no_such_script.sh",
    "scripts/test.sh --slowest",
    "scripts/test.sh --slow --all",
    "scripts/lock.sh --downgrade",                           # takes only --upgrade
    "python benchmarks/bench_efficiency.py --no-such-flag",
    "python benchmarks/no_such_bench.py",
    "python -m replication.launch --workers 2 --timeot 600 -- python train.py",
    "python -m replication.launch --workers 2 -- python -m experiments sweep --bogus",
])
def test_a_command_that_would_not_run_is_caught(command):
    assert command_errors(shlex.split(command))


@pytest.mark.parametrize("command", [
    "python -m experiments sweep --batch-sizes 8,512 --seeds 0,1 --set model.g_ch=64 --dry-run",
    "scripts/sweep_batch_sizes.sh --help",
    "scripts/reference_run.sh --out elsewhere",
    "scripts/test.sh --fast -- tests/test_docs.py",
    "scripts/test.sh --all -- -n 0",
    "scripts/study_v5.sh --dry-run",
    ".venv/bin/python -m experiments report results/fashion_mnist",
    "python -m replication.launch --workers 2 --timeout 600 -- python train.py --any-flag",
])
def test_a_command_that_parses_passes(command):
    assert command_errors(shlex.split(command)) == []


def test_a_renamed_option_named_in_prose_is_caught():
    assert inline_option_errors("Use `--n-dis 5`, `--dry-run` or `--set model.g_ch=64`.") == []
    assert len(inline_option_errors(
        "Use `--n-discriminator 5`, `--dryrun` or `--set model.g_channels=64`.")) == 3


def test_missing_paths_links_and_names_are_caught():
    text = ("See `scripts/no_such.sh`, [a doc](docs/no_such.md), `sngan.no_such_module` and "
            "`results/fashion_mnist/report/table.tex|csv|nope`.")
    errors = path_errors(text, ROOT)
    assert len(errors) == 4, errors
    assert path_errors("`sngan.layers.SNConv2D`, `results/fashion_mnist/report/"
                       "table.csv|tex`, [x](README.md), `runs/anything/`", ROOT) == []
