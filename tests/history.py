"""A small real repository with a dated history over thirteen years and a merged maintenance
branch, shaped like Flask's: an import must show it in its own time order, a merge must say
which of its commits a query matched, and a changelog's reST must not read as errors.

First-parent line, oldest first (author = committer date):
2010-04-06 Initial checkin                 2012-07-01 Add blueprints
2015-03-14 Document the config loader      2021-05-10 Start version 2.1
2021-05-21 Merge remote-tracking branch 'origin/2.0.x' into main (the three 2.0.x commits below)
2023-06-30 Drop support for Python 3.7
Branch 2.0.x (from the 2015 commit): 2021-05-12 Fix type annotation for errorhandler,
2021-05-13 send_file rejects text file objects, 2021-05-14 Fix registering a blueprint twice
with differing names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

APP_V1 = '''\
class Flask:
    def __init__(self, import_name):
        self.import_name = import_name
        self.blueprints = {}
'''
BLUEPRINTS_V1 = '''\
class Blueprint:
    def __init__(self, name, import_name):
        self.name = name
        self.import_name = import_name

    def register(self, app, options):
        app.blueprints[self.name] = self
'''
BLUEPRINTS_V2 = '''\
import warnings


class Blueprint:
    def __init__(self, name, import_name):
        if "." in name:
            raise ValueError("'name' may not contain a dot '.' character.")
        self.name = name
        self.import_name = import_name

    def register(self, app, options):
        self_name = options.get("name", self.name)
        existing_at = app.blueprints.get(self_name)
        if existing_at is not None and existing_at is not self:
            bp_desc = "this" if existing_at is self else "a different"
            warnings.warn(
                f"The name '{self_name}' is already registered for"
                f" {bp_desc} blueprint{existing_at}. Use 'name=' to"
                f" provide a unique name. This will become an error"
                " in Flask 2.1.",
                stacklevel=4,
            )
        app.blueprints[self_name] = self
'''
TYPING = '''\
import typing as t

ErrorHandlerCallable = t.Callable[[Exception], object]
error_handler_spec: t.Dict[t.Type[Exception], "ErrorHandlerCallable[Exception]"] = {}
'''
HELPERS = '''\
import io


def send_file(fp):
    if isinstance(fp, io.TextIOBase):
        raise TypeError("send_file cannot read a file opened in text mode")
    return fp.read()
'''
CHANGES_V1 = "Version 0.1\n-----------\n\nFirst public preview release.\n"
CHANGES_2_0_2 = '''\
Version 2.0.2
-------------

-   Fix type annotation for ``errorhandler`` decorator so that
    ``ErrorHandlerCallable[Exception]`` is accepted as an error handler. :issue:`4095`
-   ``send_file`` raises a ``TypeError`` when passed a text file object
    such as :class:`~io.StringIO` or :class:`~io.TextIOBase`, an error
    instead of an empty response. :issue:`4104`
-   Fix registering a blueprint twice with differing names. Registering
    the same name twice warns "provide a unique name. This will become an error"
    in 2.1. :issue:`4124`

'''

AUTHORS = {"armin": "Armin Ronacher", "david": "David Lord", "pgjones": "Phil Jones"}
SUBJECT_TWICE = "Fix registering a blueprint twice with differing names"
MERGE_SUBJECT = "Merge remote-tracking branch 'origin/2.0.x' into main"


@dataclass
class History:
    path: Path
    shas: dict[str, str]  # "initial", "blueprints", "docs", "start21", "annotation", "sendfile", "twice", "merge", "py37"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def _commit(repo: git.Repo, root: Path, files: dict[str, str], message: str, when: str, author: str) -> str:
    _write(root, files)
    repo.git.add("-A")
    name = AUTHORS[author]
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_NAME": name,
           "GIT_COMMITTER_NAME": name, "GIT_AUTHOR_EMAIL": f"{author}@example.com",
           "GIT_COMMITTER_EMAIL": f"{author}@example.com"}
    repo.git.commit("-q", "-m", message, env=env)
    return repo.head.commit.hexsha


def build_history(root: Path) -> History:
    """The history described above, in `root`."""
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("commit", "gpgsign", "false")
    s: dict[str, str] = {}
    s["initial"] = _commit(repo, root, {"flask/app.py": APP_V1, "CHANGES.rst": CHANGES_V1},
                           "Initial checkin", "2010-04-06T12:00:00+00:00", "armin")
    s["blueprints"] = _commit(repo, root, {"flask/blueprints.py": BLUEPRINTS_V1},
                              "Add blueprints", "2012-07-01T09:30:00+00:00", "armin")
    s["docs"] = _commit(repo, root, {"docs/config.rst": "Configuration\n=============\n\nThe loader reads files.\n"},
                        "Document the config loader", "2015-03-14T15:09:26+00:00", "armin")
    repo.git.checkout("-q", "-b", "2.0.x")
    s["annotation"] = _commit(repo, root, {"flask/typing.py": TYPING},
                              "Fix type annotation for errorhandler", "2021-05-12T10:00:00+00:00", "pgjones")
    s["sendfile"] = _commit(repo, root, {"flask/helpers.py": HELPERS},
                            "send_file rejects text file objects", "2021-05-13T10:00:00+00:00", "david")
    s["twice"] = _commit(repo, root, {"flask/blueprints.py": BLUEPRINTS_V2, "CHANGES.rst": CHANGES_2_0_2 + CHANGES_V1},
                         SUBJECT_TWICE, "2021-05-14T10:00:00+00:00", "david")
    repo.git.checkout("-q", "main")
    s["start21"] = _commit(repo, root, {"flask/app.py": APP_V1 + "\n__version__ = '2.1.0.dev0'\n"},
                           "Start version 2.1", "2021-05-10T08:00:00+00:00", "david")
    when = "2021-05-21T18:00:00+00:00"
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_NAME": AUTHORS["david"],
           "GIT_COMMITTER_NAME": AUTHORS["david"], "GIT_AUTHOR_EMAIL": "david@example.com",
           "GIT_COMMITTER_EMAIL": "david@example.com"}
    repo.git.merge("-q", "--no-ff", "-m", MERGE_SUBJECT, "2.0.x", env=env)
    s["merge"] = repo.head.commit.hexsha
    s["py37"] = _commit(repo, root, {"setup.cfg": "[options]\npython_requires = >= 3.8\n"},
                        "Drop support for Python 3.7", "2023-06-30T11:00:00+00:00", "david")
    repo.close()
    return History(root, s)
