"""The run directory: Python's rule (spinlab_vm.state.run_dir) and the C++ tools' rule
(hostlib/run_dir.h, printed by `spinlab-load run-dir`) agree for every environment, for root and
for another user (uid 65534), with and without a login's runtime directory /run/user/<uid>, and
refuse a per-user directory under TMPDIR that another user could control in the same words.

The comparison runs in a private mount namespace (unshare --mount) with fresh tmpfs mounts on
/run/user and /tmp, so it neither reads nor leaves anything in the host's; this file is also the
script that runs there (`python3 test_run_dir.py probe VARIANT`)."""
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

VM_IMAGES = Path(__file__).resolve().parents[1]
if str(VM_IMAGES) not in sys.path:
    sys.path.insert(0, str(VM_IMAGES))

from spinlab_vm import state  # noqa: E402
from spinlab_vm.config import VmError  # noqa: E402

SPINLAB_LOAD = os.environ.get("SPINLAB_LOAD", str(VM_IMAGES.parent / "build" / "host" / "bin" / "spinlab-load"))
NOBODY = 65534
HINT = "set SPINLAB_RUN_DIR (or XDG_RUNTIME_DIR, for a user other than root) to a directory you may write"

# Environments the probe compares in; TMPDIRs under /tmp are made by the probe (the namespace's
# own /tmp): t (1777, empty), planted (1777, spinlab-65534 root's), open (spinlab-65534 of
# 65534's, mode 0777), linked (spinlab-65534 a symbolic link to t).
ENVIRONMENTS = {
    "none": {},
    "explicit": {"SPINLAB_RUN_DIR": "/tmp/explicit"},
    "explicit+xdg": {"SPINLAB_RUN_DIR": "/tmp/explicit", "XDG_RUNTIME_DIR": "/run/user/1000"},
    "xdg": {"XDG_RUNTIME_DIR": "/run/user/1000"},
    "xdg/": {"XDG_RUNTIME_DIR": "/run/user/1000/"},
    "empty": {"SPINLAB_RUN_DIR": "", "XDG_RUNTIME_DIR": ""},
    "tmpdir": {"TMPDIR": "/tmp/t"},
    "tmpdir/": {"TMPDIR": "/tmp/t/"},
    "tmpdir-relative": {"TMPDIR": "t"},
    "tmpdir-missing": {"TMPDIR": "/tmp/missing"},
    "planted": {"TMPDIR": "/tmp/planted"},
    "open": {"TMPDIR": "/tmp/open"},
    "linked": {"TMPDIR": "/tmp/linked"},
    "planted-xdg": {"TMPDIR": "/tmp/planted", "XDG_RUNTIME_DIR": "/run/user/1000"},
}
# /run/user/65534 in the namespace: absent, a directory of 65534's, a symbolic link to one, a
# directory of root's.
VARIANTS = ["absent", "login", "link", "root-owned"]


# ---- the rule itself, no C++ needed -------------------------------------------------------

def test_the_rule(tmp_path):
    run_user = tmp_path / "run-user"
    run_user.mkdir()
    rule = lambda env, uid: state.resolve_run_dir(env, uid, run_user=run_user)  # noqa: E731
    xdg = {"XDG_RUNTIME_DIR": "/run/user/1000"}
    assert rule({}, 0) == Path("/run/spinlab")
    assert rule(xdg, 0) == Path("/run/spinlab")
    assert rule(xdg, 1000) == Path("/run/user/1000/spinlab")
    assert rule(dict(xdg, SPINLAB_RUN_DIR="/x"), 1000) == Path("/x")
    assert rule({"SPINLAB_RUN_DIR": "/x"}, 0) == Path("/x")
    # Without XDG_RUNTIME_DIR: the login's directory when it is the user's, else under TMPDIR.
    me = os.geteuid()
    assert rule({}, me + 1) == Path(f"/tmp/spinlab-{me + 1}")
    (run_user / str(me + 1)).mkdir()   # ours, named for another uid: not that uid's
    assert rule({"TMPDIR": "/var/tmp"}, me + 1) == Path(f"/var/tmp/spinlab-{me + 1}")
    if me != 0:
        (run_user / str(me)).mkdir()
        assert rule({}, me) == run_user / str(me) / "spinlab"
    elif hasattr(os, "chown"):
        os.chown(run_user / str(me + 1), me + 1, me + 1)
        assert rule({}, me + 1) == run_user / str(me + 1) / "spinlab"
        (run_user / str(me + 2)).symlink_to(run_user / str(me + 1))   # a link: not a login's
        assert rule({}, me + 2) == Path(f"/tmp/spinlab-{me + 2}")
    assert state.tmp_run_dir({"TMPDIR": "relative"}, 7) == Path("/tmp/spinlab-7")
    assert state.tmp_run_dir({"TMPDIR": "/var/tmp/"}, 7) == Path("/var/tmp/spinlab-7")


def test_the_per_user_directory_is_made_0700_and_a_planted_one_refused(tmp_path):
    me = os.geteuid()
    mine = tmp_path / "spinlab-1"
    assert state.claim_tmp_run_dir(mine, me) == ""
    assert stat.S_IMODE(os.lstat(mine).st_mode) == 0o700
    who = state._who(me)
    assert state.claim_tmp_run_dir(mine, NOBODY) == (
        f"refusing the run directory {mine}: it is owned by {who}, not by you, {state._who(NOBODY)}, and a run "
        f"directory someone else controls is never used; remove it or {HINT}")
    os.chmod(mine, 0o770)
    assert state.claim_tmp_run_dir(mine, me).startswith(
        f"refusing the run directory {mine}: it is yours, {who}, but others may write it (mode 0770)")
    (tmp_path / "spinlab-2").symlink_to(mine)
    assert "it is a symbolic link, owned by" in state.claim_tmp_run_dir(tmp_path / "spinlab-2", me)


# ---- C++ and Python in a private mount namespace ------------------------------------------

def _probe(variant):
    """In the namespace (root): set up /run/user and /tmp for `variant`, then for every
    environment and for root and uid 65534 what each language answers: {case: {cxx, py, made}}."""
    base = "/run/user" if os.path.isdir("/run/user") else "/run"
    # The checkout (and so spinlab-load) may itself be under /tmp or /run, which the tmpfs mounts
    # hide: the probe runs a copy of the binary from the namespace's own /tmp.
    with open(SPINLAB_LOAD, "rb") as f:
        binary = f.read()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "spinlab-test", base], check=True)
    os.makedirs("/run/user", exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "spinlab-test", "/tmp"], check=True)
    os.mkdir("/tmp/.bin", 0o755)
    spinlab_load = "/tmp/.bin/spinlab-load"
    with open(spinlab_load, "wb") as f:
        f.write(binary)
    os.chmod(spinlab_load, 0o755)
    login = f"/run/user/{NOBODY}"
    if variant in ("login", "root-owned"):
        os.mkdir(login, 0o700)
        if variant == "login":
            os.chown(login, NOBODY, NOBODY)
    elif variant == "link":
        os.mkdir("/run/user/real", 0o700)
        os.chown("/run/user/real", NOBODY, NOBODY)
        os.symlink("/run/user/real", login)
    for d in ("t", "planted", "open", "linked"):
        os.mkdir(f"/tmp/{d}")
        os.chmod(f"/tmp/{d}", 0o1777)
    os.mkdir(f"/tmp/planted/spinlab-{NOBODY}", 0o755)
    os.mkdir(f"/tmp/open/spinlab-{NOBODY}")
    os.chown(f"/tmp/open/spinlab-{NOBODY}", NOBODY, NOBODY)
    os.chmod(f"/tmp/open/spinlab-{NOBODY}", 0o777)
    os.symlink("/tmp/t", f"/tmp/linked/spinlab-{NOBODY}")
    fresh = [f"/tmp/spinlab-{NOBODY}", f"/tmp/t/spinlab-{NOBODY}", "/tmp/spinlab-0"]

    def made():
        out = {}
        for p in fresh:
            try:
                st = os.lstat(p)
                out[p] = [st.st_uid, oct(stat.S_IMODE(st.st_mode))]
            except FileNotFoundError:
                pass
        return out

    def python_as(env, uid):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                os.environ.clear()
                os.environ.update(env)
                if uid:
                    os.setgroups([])
                    os.setresgid(uid, uid, uid)
                    os.setresuid(uid, uid, uid)
                try:
                    answer = {"path": str(state.run_dir())}
                except VmError as e:
                    answer = {"refused": str(e)}
                os.write(w, json.dumps(answer).encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            out = f.read()
        os.waitpid(pid, 0)
        return json.loads(out)

    def cxx_as(env, uid):
        extra = {"user": uid, "group": uid, "extra_groups": []} if uid else {}
        p = subprocess.run([spinlab_load, "run-dir"], env=env, capture_output=True, text=True, timeout=30, **extra)
        if p.returncode == 0:
            return {"path": p.stdout.strip()}
        return {"refused": p.stderr.strip().removeprefix("spinlab-load: "), "status": p.returncode}

    results = {}
    for name, env in ENVIRONMENTS.items():
        for uid in (0, NOBODY):
            case = f"{name} uid {uid}"
            for p in fresh:   # each language makes the per-user directory itself
                shutil.rmtree(p, ignore_errors=True)
            cxx = cxx_as(env, uid)
            cxx_made = made()
            for p in fresh:
                shutil.rmtree(p, ignore_errors=True)
            py = python_as(env, uid)
            results[case] = {"cxx": cxx, "py": py, "cxx_made": cxx_made, "py_made": made()}
    return results


def _can_probe():
    """Why the comparison cannot run here, or ''."""
    if os.geteuid() != 0:
        return "needs root (a private mount namespace, and a child as uid 65534)"
    if not os.path.exists(SPINLAB_LOAD):
        return f"{SPINLAB_LOAD} not built"
    if shutil.which("unshare") is None or subprocess.run(["unshare", "--mount", "true"],
                                                         capture_output=True).returncode != 0:
        return "unshare --mount does not work here"
    if subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", SPINLAB_LOAD, "--help"],
                      capture_output=True).returncode != 0:
        return f"user {NOBODY} cannot run {SPINLAB_LOAD} (a directory above it is not searchable)"
    return ""


def _run_probe(variant):
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, __file__, "probe", variant],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, SPINLAB_LOAD=SPINLAB_LOAD))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


try:
    import pytest
except ImportError:   # the probe, run as a script in the namespace, needs no pytest
    pytest = None

if pytest:
    @pytest.mark.parametrize("variant", VARIANTS)
    def test_python_and_cxx_agree(variant):
        why = _can_probe()
        if why:
            pytest.skip(why)
        results = _run_probe(variant)
        for case, r in results.items():
            assert r["cxx"].get("path") == r["py"].get("path"), f"{variant}, {case}: {r}"
            assert r["cxx"].get("refused") == r["py"].get("refused"), f"{variant}, {case}: {r}"
            assert r["cxx_made"] == r["py_made"], f"{variant}, {case}: {r}"
            if "refused" in r["cxx"]:
                assert r["cxx"]["status"] == 2, f"{variant}, {case}: {r}"

        def answer(case):
            return results[case]["py"].get("path") or results[case]["py"]["refused"]
        # What the rule says, in both languages (they agree, checked above).
        nobody_home = {"absent": f"/tmp/spinlab-{NOBODY}", "login": f"/run/user/{NOBODY}/spinlab",
                       "link": f"/tmp/spinlab-{NOBODY}", "root-owned": f"/tmp/spinlab-{NOBODY}"}[variant]
        assert answer("none uid 0") == "/run/spinlab"
        assert answer("xdg uid 0") == "/run/spinlab"
        assert answer("explicit uid 65534") == "/tmp/explicit"
        assert answer("xdg uid 65534") == answer("xdg/ uid 65534") == "/run/user/1000/spinlab"
        assert answer("none uid 65534") == answer("empty uid 65534") == nobody_home
        if nobody_home.startswith("/tmp/"):
            # Made for the user, 0700, by each language alone.
            assert results["none uid 65534"]["py_made"][nobody_home] == [NOBODY, "0o700"]
            assert answer("tmpdir uid 65534") == answer("tmpdir/ uid 65534") == f"/tmp/t/spinlab-{NOBODY}"
            assert results["tmpdir uid 65534"]["cxx_made"][f"/tmp/t/spinlab-{NOBODY}"] == [NOBODY, "0o700"]
            assert answer("tmpdir-relative uid 65534") == f"/tmp/spinlab-{NOBODY}"
            assert answer("tmpdir-missing uid 65534") == f"/tmp/missing/spinlab-{NOBODY}"
            assert answer("planted uid 65534") == (
                f"refusing the run directory /tmp/planted/spinlab-{NOBODY}: it is owned by root (uid 0), not by "
                f"you, {state._who(NOBODY)}, and a run directory someone else controls is never used; remove it "
                f"or {HINT}")
            assert answer("open uid 65534").startswith(
                f"refusing the run directory /tmp/open/spinlab-{NOBODY}: it is yours, {state._who(NOBODY)}, but "
                "others may write it (mode 0777)")
            assert answer("linked uid 65534").startswith(
                f"refusing the run directory /tmp/linked/spinlab-{NOBODY}: it is a symbolic link, owned by root "
                "(uid 0)")
        else:
            assert answer("planted uid 65534") == nobody_home   # the login's directory wins
        assert answer("planted-xdg uid 65534") == "/run/user/1000/spinlab"
        assert answer("planted uid 0") == "/run/spinlab"


if __name__ == "__main__" and sys.argv[1:2] == ["probe"]:
    print(json.dumps(_probe(sys.argv[2])))
