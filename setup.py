"""The build step pyproject.toml cannot declare: the wheel carries the Ansible content the package drives.

``build_py`` copies ``ansible.cfg``, ``playbooks/``, ``plugins/`` (the playbooks' filters) and ``roles/`` of the source
tree into the built package as ``provision/_content/`` (provision/paths.py finds them there when no checkout is around
the package), so that ``pip install .`` or ``pipx install provision-*.whl`` gives a ``provision`` that can install
nodes. Everything else of
the package is declared in pyproject.toml. The sdist carries the same files (MANIFEST.in).
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
CONTENT = ("ansible.cfg", "playbooks", "plugins", "roles")


class BuildWithContent(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "provision" / "_content"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in CONTENT:
            source = HERE / name
            if source.is_dir():
                shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, target / name)


setup(cmdclass={"build_py": BuildWithContent})
