"""Tests for generating student notebooks from solution notebooks, and for keeping them clean."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from coursetools import execute, nbfile, notebooks

INDENTED_SOLUTION = """def double(x):
    \"\"\"Twice x.\"\"\"
    ### BEGIN SOLUTION
    y = x * 2
    return y
    ### END SOLUTION"""

INDENTED_STUDENT = """def double(x):
    \"\"\"Twice x.\"\"\"
    # YOUR CODE HERE
    raise NotImplementedError"""

TWO_REGIONS = """### BEGIN SOLUTION
a = 1
### END SOLUTION
print("between")
if True:
        ### BEGIN SOLUTION
        b = 2
        ### END SOLUTION"""

MARKDOWN_SOLUTION = """**Question:** why divide by the std?

### BEGIN SOLUTION
It makes the advantages scale-free.
### END SOLUTION"""


def solution_notebook():
    """A small solution notebook with regions in code and markdown cells."""
    return new_notebook(
        cells=[
            new_markdown_cell("# Demo", id="intro"),
            new_code_cell(INDENTED_SOLUTION, id="double"),
            new_code_cell(TWO_REGIONS, id="two-regions"),
            new_markdown_cell(MARKDOWN_SOLUTION, id="question"),
            new_code_cell("print(double(2))", id="plain"),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )


def dirty(nb):
    """Add outputs, execution counts, widget state and timing metadata to a notebook (in place)."""
    cell = nb.cells[4]
    cell.outputs = [new_output("stream", name="stdout", text="4\n")]
    cell.execution_count = 3
    cell.metadata["execution"] = {"iopub.status.busy": "2024-01-01T00:00:00Z"}
    cell.metadata["tags"] = ["keep-me"]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return nb


def write_repo(root, nb=None, name="01_demo.ipynb"):
    """A repository folder with one solution notebook and an empty notebooks/ folder."""
    (root / "solutions").mkdir(exist_ok=True)
    (root / "notebooks").mkdir(exist_ok=True)
    nbformat.write(nb or solution_notebook(), str(root / "solutions" / name))
    return root / "solutions" / name


# ----------------------------------------------------------------------------- make_student


def test_code_region_is_replaced_keeping_indentation():
    student = nbfile.make_student(solution_notebook())
    assert student.cells[1].source == INDENTED_STUDENT


def test_several_regions_in_one_cell_are_replaced():
    source = nbfile.make_student(solution_notebook()).cells[2].source
    lines = source.split("\n")
    assert lines == [
        "# YOUR CODE HERE",
        "raise NotImplementedError",
        'print("between")',
        "if True:",
        "        # YOUR CODE HERE",
        "        raise NotImplementedError",
    ]


def test_markdown_region_becomes_an_answer_placeholder():
    source = nbfile.make_student(solution_notebook()).cells[3].source
    assert "scale-free" not in source
    assert source.endswith("**Your answer:** _write your answer here_")
    assert source.startswith("**Question:**")


def test_cells_without_markers_and_cell_ids_are_kept():
    solution = solution_notebook()
    student = nbfile.make_student(solution)
    assert [cell.id for cell in student.cells] == [cell.id for cell in solution.cells]
    assert student.cells[4].source == solution.cells[4].source
    assert "BEGIN SOLUTION" in solution.cells[1].source  # the input is not modified


@pytest.mark.parametrize(
    "source, problem",
    [
        ("### BEGIN SOLUTION\nx = 1", "without a matching"),
        ("x = 1\n### END SOLUTION", "without a matching BEGIN"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "nested"),
    ],
)
def test_unbalanced_markers_name_the_notebook_and_cell(source, problem):
    nb = solution_notebook()
    nb.cells.append(new_code_cell(source))
    with pytest.raises(nbfile.MarkerError, match=problem) as error:
        nbfile.make_student(nb, "01_demo.ipynb")
    assert "01_demo.ipynb, cell 5" in str(error.value)


# ----------------------------------------------------------------------------- cleanliness


def test_is_clean_detects_outputs_counts_widgets_and_timing():
    problems = " | ".join(nbfile.is_clean(dirty(solution_notebook())))
    assert "cell 4 has outputs" in problems
    assert "cell 4 has an execution count" in problems
    assert "metadata.widgets" in problems
    assert "metadata.execution" in problems


def test_clean_notebook_is_clean_and_keeps_tags():
    cleaned = nbfile.clean_notebook(dirty(solution_notebook()))
    assert nbfile.is_clean(cleaned) == []
    assert cleaned.cells[4].metadata["tags"] == ["keep-me"]


def test_student_notebook_is_clean_and_valid():
    student = nbfile.make_student(dirty(solution_notebook()))
    assert nbfile.is_clean(student) == []
    assert (student.nbformat, student.nbformat_minor) == (4, 5)
    nbformat.validate(student)


def test_cells_without_ids_get_deterministic_ones():
    nb = solution_notebook()
    for cell in nb.cells:
        del cell["id"]
    nb.nbformat_minor = 4
    first = nbfile.serialize(nbfile.make_student(nb))
    second = nbfile.serialize(nbfile.make_student(nb))
    assert first == second
    nbformat.validate(nbformat.reads(first, as_version=4))


def test_strip_cleans_files_in_place(tmp_path):
    path = tmp_path / "x.ipynb"
    nbformat.write(dirty(solution_notebook()), str(path))
    assert notebooks.strip([path]) == [path]
    assert nbfile.is_clean(nbfile.read_notebook(path)) == []
    assert notebooks.strip([path]) == []


# ----------------------------------------------------------------------------- generate and check


def test_generate_writes_student_notebooks_byte_identically(tmp_path):
    write_repo(tmp_path)
    assert notebooks.main(["generate", "--root", str(tmp_path)]) == 0
    student = tmp_path / "notebooks" / "01_demo.ipynb"
    first = student.read_bytes()
    assert notebooks.main(["generate", "--root", str(tmp_path)]) == 0
    assert student.read_bytes() == first
    assert notebooks.check_repo(tmp_path) == []
    assert notebooks.main(["check", "--root", str(tmp_path)]) == 0


def test_expected_students_matches_generated_files(tmp_path):
    write_repo(tmp_path)
    notebooks.generate(tmp_path)
    expected = notebooks.expected_students(tmp_path)
    assert list(expected) == [tmp_path / "notebooks" / "01_demo.ipynb"]
    for path, nb in expected.items():
        assert path.read_text(encoding="utf-8") == nbfile.serialize(nb)


def test_check_fails_when_a_student_notebook_drifts(tmp_path, capsys):
    write_repo(tmp_path)
    notebooks.generate(tmp_path)
    student = tmp_path / "notebooks" / "01_demo.ipynb"
    nb = nbfile.read_notebook(student)
    nb.cells[4].source = "print('edited by hand')"
    nbformat.write(nb, str(student))
    assert notebooks.main(["check", "--root", str(tmp_path)]) == 1
    assert "notebooks/01_demo.ipynb: differs" in capsys.readouterr().out


def test_check_fails_on_missing_and_extra_student_notebooks(tmp_path):
    write_repo(tmp_path)
    nbformat.write(new_notebook(), str(tmp_path / "notebooks" / "02_orphan.ipynb"))
    problems = " | ".join(notebooks.check_repo(tmp_path))
    assert "notebooks/01_demo.ipynb: missing" in problems
    assert "notebooks/02_orphan.ipynb: has no solution" in problems


def test_check_fails_on_outputs_in_a_solution_notebook(tmp_path, capsys):
    write_repo(tmp_path, dirty(solution_notebook()))
    notebooks.generate(tmp_path)
    assert notebooks.main(["check", "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "solutions/01_demo.ipynb: cell 4 has outputs" in out
    assert "solutions/01_demo.ipynb: widget state" in out
    assert "notebooks/01_demo.ipynb" not in out  # the generated student copy is clean and in sync


def test_generate_reports_unbalanced_markers(tmp_path, capsys):
    nb = solution_notebook()
    nb.cells.append(new_code_cell("### BEGIN SOLUTION\nx = 1"))
    write_repo(tmp_path, nb)
    assert notebooks.main(["generate", "--root", str(tmp_path)]) == 1
    assert "01_demo.ipynb, cell 5" in capsys.readouterr().err
    problems = notebooks.check_repo(tmp_path)
    assert len(problems) == 1 and "01_demo.ipynb, cell 5" in problems[0]


def test_a_render_folder_that_is_a_file_is_a_usage_error_before_anything_runs(tmp_path, capsys):
    from coursetools import cli

    (tmp_path / "a-file").write_text("x")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["notebooks", "render", "--out", str(tmp_path / "a-file")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.strip().endswith("is a file, not a folder") and "Traceback" not in err


def test_python_m_coursetools_dispatches_every_command_with_its_own_options(capsys):
    from coursetools import cli

    for name in cli.COMMANDS:
        with pytest.raises(SystemExit) as exit_info:
            cli.main([name, "--help"])
        assert exit_info.value.code == 0, name
        usage = capsys.readouterr().out.split("\n")[0]
        assert usage.startswith(f"usage: python -m coursetools {name}"), usage
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["sft"])  # the learner's command is not here
    assert exit_info.value.code == 2 and "invalid choice: 'sft'" in capsys.readouterr().err


def test_text_view_holds_sources_printed_text_markdown_tables_and_errors():
    code = new_code_cell("print(1)")
    code.outputs = [
        new_output("stream", name="stdout", text="accuracy 78.8%\n"),
        new_output(
            "display_data",
            data={
                "text/markdown": "| run | acc |\n|---|---|\n| a | 94% |",
                "text/plain": "<IPython.core.display.Markdown object>",
            },
        ),
        new_output("execute_result", data={"text/plain": "0.25"}, execution_count=1),
        new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480>"}),
        new_output("error", ename="ValueError", evalue="bad shape", traceback=[]),
    ]
    text = execute.to_text(new_notebook(cells=[new_markdown_cell("We measure **79%**."), code]))
    assert text.index("===== cell 0 [markdown] =====") < text.index("We measure **79%**.")
    assert text.index("===== cell 1 [code] =====") < text.index("print(1)") < text.index("accuracy 78.8%")
    assert "| a | 94% |" in text and "Markdown object" not in text  # the table, not its repr
    assert "--- result:\n0.25" in text
    assert "--- error: ValueError: bad shape" in text
    assert "--- figure (PNG" in text and "<Figure size" not in text
