"""In-process: the checks of tests/world/test_binder.py's subject that start no process."""
import json
import os
import re
import time
import yaml

from course_lib.paths import ROOT

INSTALL = re.compile(r"python -m (course_lib\.[\w.]+ install)\b")


def makefile_installs() -> list[str]:
    """The install steps of the set-up's stamp recipe, in order."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\n$(STAMP): ", 1)[1].split("\n\n", 1)[0]
    return INSTALL.findall(recipe)


def test_postbuild_runs_the_set_ups_install_steps_and_environment_yml_lists_them():
    steps = makefile_installs()
    assert steps == ["course_lib.chapters.peers_lab install", "course_lib.sdk129 install",
                     "course_lib.chapters.servers_env install"]
    postbuild = (ROOT / "binder" / "postBuild").read_text(encoding="utf-8")
    assert INSTALL.findall(postbuild) == steps
    assert "python -m pip install" in postbuild and "-e ." in postbuild, "Binder installs course_lib itself"
    assert "python -m course_lib.tooling.student_copy" in postbuild
    assert os.access(ROOT / "binder" / "postBuild", os.X_OK), "Binder runs postBuild only when executable"
    header = "".join(line for line in (ROOT / "environment.yml").read_text().splitlines(keepends=True)
                     if line.startswith("#"))
    assert INSTALL.findall(header) == steps
    assert "three install commands" in header


def test_the_readme_counts_the_install_commands_environment_yml_lists():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    counted = re.findall(r"lists the (\w+) install commands", readme)
    words = {2: "two", 3: "three", 4: "four"}
    assert counted == [words[len(makefile_installs())]]


def test_binders_environment_is_the_conda_route_less_the_editable_install():
    main = yaml.safe_load((ROOT / "environment.yml").read_text())
    binder = yaml.safe_load((ROOT / "binder" / "environment.yml").read_text())
    assert binder["channels"] == main["channels"]
    conda = [d for d in main["dependencies"] if isinstance(d, str)]
    assert [d for d in binder["dependencies"] if isinstance(d, str)] == conda
    pip = next(d["pip"] for d in main["dependencies"] if isinstance(d, dict))
    binder_pip = next(d["pip"] for d in binder["dependencies"] if isinstance(d, dict))
    assert pip[-1] == "-e ." and binder_pip == pip[:-1]


def test_the_binder_badge_opens_the_student_copy_at_chapter_00():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (badge,) = re.findall(r"\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]\(([^)]+)\)", readme)
    assert badge.startswith("https://mybinder.org/v2/gh/")
    assert badge.endswith("?urlpath=lab/tree/student/00_orientation.ipynb")


def test_the_devcontainer_runs_the_set_up_and_forwards_jupyterlab():
    config = json.loads((ROOT / ".devcontainer" / "devcontainer.json").read_text())
    assert config["postCreateCommand"] == "make student"
    assert "\nstudent: $(STAMP)" in (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"python:3\.1[1-9]", config["image"]), "a Python the course accepts"
    assert 8888 in config["forwardPorts"]
    assert "make lab" in config["postAttachCommand"]


def test_the_kubernetes_image_and_values_follow_the_tested_set_up():
    """docs/zero-to-jupyterhub is not run here; it must at least say so, run the set-up's install
    steps, and keep the classroom's settings (authenticator, copy, idle time)."""
    folder = ROOT / "docs" / "zero-to-jupyterhub"
    image = (folder / "Dockerfile").read_text(encoding="utf-8")
    values_text = (folder / "values.yaml").read_text(encoding="utf-8")
    assert "NOT RUN HERE" in image and "NOT RUN HERE" in values_text
    assert INSTALL.findall(image) == makefile_installs()
    assert "-c .ci/constraints.txt -e '.[classroom]'" in image
    values = yaml.safe_load(values_text)
    assert values["hub"]["config"]["JupyterHub"]["authenticator_class"] == "shared-password"
    assert values["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"][:3] == [
        "python", "-m", "course_lib.tooling.student_copy"]
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] == 60 * 60  # make classroom's IDLE
