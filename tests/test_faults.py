"""Fault injection: `compile-net` in subprocesses, killed or starved on purpose (slow-marked; ~70 s on 2 cores).

Each scenario checks the message the user gets and that nothing written before changed (content hash, inode
and mtime of every file of every complete checkpoint), and, where a rerun makes sense, that the rerun resumes
after the last complete checkpoint, finishes, and leaves no leftovers behind.

Faults are injected by a small harness (`HARNESS` below) that patches the engine in the child process before
running `compile_net_main`; the product code has no test hooks. A full disk is a real tiny tmpfs where `mount`
works (root; FAULT_NO_MOUNT=1 forces the stand-in), else a patched write raising TensorFlow's ENOSPC error; a
read-only folder is a read-only bind mount as root, else a chmod'ed folder. FAULT_SEED=N repeats a random kill.
"""

import glob
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 120

CONFIG = """
train = {"class": "Task12AXDataset", "num_seqs": NUM_SEQS}
dev = {"class": "Task12AXDataset", "num_seqs": 20, "fixed_random_seed": 1}
extern_data = {"data": {"dim": 9}, "classes": {"dim": 2, "sparse": True}}
network = {"h": {"class": "linear", "n_out": 32, "from": "data", "activation": "tanh"},
           "output": {"class": "softmax", "loss": "ce", "from": "h", "target": "classes"}}
optimizer = {"class": "adam"}
learning_rate = 0.01
num_epochs = 3
model = "out/model"
"""

# FAULT=kind:epoch in the environment selects what the child does when it saves that epoch's checkpoint.
HARNESS = """
import os, signal, sys, threading, time
sys.path.insert(0, REPO)
kind, _, epoch = os.environ.get("FAULT", "").partition(":")
if kind:
    import tensorflow as tf
    from netcompiler.engine import checkpoints
    mark = ".tmp-%03d-" % int(epoch)
    real_write, real_rename = tf.train.Checkpoint.write, checkpoints.CheckpointManager._rename_into_place

    def die():
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def write(self, file_prefix, options=None):
        if mark not in file_prefix:
            return real_write(self, file_prefix, options)
        if kind == "kill-in-tf-write":  # a big extra value keeps TF's _temp folder there long enough to see it
            self.ballast = tf.Variable(tf.zeros([8_000_000]))
            def watch():
                while not os.path.isdir(file_prefix + "_temp"):
                    time.sleep(0.0005)
                die()
            threading.Thread(target=watch, daemon=True).start()
            real_write(self, file_prefix, options)
            time.sleep(5)
            print("the kill came too late", flush=True)
            die()
        if kind == "enospc":  # what TF does on a full disk: a _temp folder left, ResourceExhaustedError
            os.makedirs(file_prefix + "_temp")
            raise tf.errors.ResourceExhaustedError(None, None, file_prefix + "_temp/part-00000-of-00001.data-"
                                                   "00000-of-00001.tempstate1; No space left on device")
        return real_write(self, file_prefix, options)

    def rename(self, source, target):
        if kind == "kill-before-index" and mark in source and target.endswith(".index"):
            die()
        real_rename(self, source, target)

    tf.train.Checkpoint.write = write
    checkpoints.CheckpointManager._rename_into_place = rename
from netcompiler.cli import compile_net_main
sys.exit(compile_net_main(sys.argv[1:]))
""".replace("REPO", repr(str(REPO)))


class Run:
    def __init__(self, proc, stdout, stderr):
        self.returncode, self.stdout, self.stderr = proc.returncode, stdout, stderr

    @property
    def user_stderr(self):
        return [line for line in self.stderr.splitlines() if line.strip() and not _tf_log(line)]

    def __repr__(self):
        return f"exit {self.returncode}\n--- stdout:\n{self.stdout[-2000:]}\n--- stderr:\n{self.stderr[-2000:]}"


def _tf_log(line):
    return line[:1] in "IWEF" and line[1:5].isdigit() or line.startswith(
        ("WARNING: All log messages", "To enable the following", "This TensorFlow binary"))


def command(workdir, *args):
    return [sys.executable, "-c", HARNESS, str(workdir / "config.py"), *map(str, args)]


def env(fault=""):
    return dict(os.environ, FAULT=fault, TF_CPP_MIN_LOG_LEVEL="3")


def compile_net(workdir, *args, fault=""):
    proc = subprocess.run(command(workdir, *args), cwd=workdir, env=env(fault), capture_output=True, text=True,
                          timeout=TIMEOUT)
    return Run(proc, proc.stdout, proc.stderr)


def start(workdir, *args, fault=""):
    return subprocess.Popen(command(workdir, *args), cwd=workdir, env=env(fault), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_line(proc, prefix):
    """Reads the child's stdout until a line starting with `prefix`; returns what was read."""
    seen = []
    deadline = time.monotonic() + TIMEOUT
    for line in proc.stdout:
        seen.append(line)
        if line.startswith(prefix) or time.monotonic() > deadline:
            break
    assert seen and seen[-1].startswith(prefix), "".join(seen) + proc.stderr.read()
    return "".join(seen)


def finish(proc):
    stdout, stderr = proc.communicate(timeout=TIMEOUT)
    return Run(proc, stdout, stderr)


def workdir_with(tmp_path, num_seqs=200):
    (tmp_path / "config.py").write_text(CONFIG.replace("NUM_SEQS", str(num_seqs)), encoding="utf-8")
    return tmp_path


def complete_files(workdir):
    """All files of all complete checkpoints."""
    out = workdir / "out"
    files = []
    for index in sorted(glob.glob(str(out / "model.[0-9][0-9][0-9].index"))):
        files += sorted(glob.glob(glob.escape(index[:-len(".index")]) + ".*"))
    return files


def fingerprint(paths):
    result = {}
    for path in paths:
        stat = os.stat(path)
        result[path] = (hashlib.sha256(Path(path).read_bytes()).hexdigest(), stat.st_ino, stat.st_mtime_ns)
    return result


def leftovers(workdir):
    return [n for n in os.listdir(workdir / "out") if ".tmp-" in n or "_temp" in n]


def epochs_done(workdir):
    return [int(os.path.basename(p)[len("model."):-len(".index")])
            for p in sorted(glob.glob(str(workdir / "out" / "model.[0-9][0-9][0-9].index")))]


def assert_resumes(workdir, before, after_epoch):
    """A plain rerun resumes after `after_epoch`, finishes, changes nothing written before, leaves no leftovers."""
    run = compile_net(workdir)
    assert run.returncode == 0, run
    if after_epoch:
        assert f"resuming after epoch {after_epoch} from out/model.{after_epoch:03d}" in run.stdout, run
    assert fingerprint(list(before)) == before, "a checkpoint written before the fault changed"
    assert epochs_done(workdir) == [1, 2, 3], os.listdir(workdir / "out")
    assert leftovers(workdir) == [], os.listdir(workdir / "out")
    assert (workdir / "out" / "model.lock").read_text() == ""
    return run


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A model with its three checkpoints, to copy."""
    workdir = workdir_with(tmp_path_factory.mktemp("trained"))
    run = compile_net(workdir)
    assert run.returncode == 0, run
    return workdir


def copy_of(trained, tmp_path):
    workdir = workdir_with(tmp_path)
    shutil.copytree(trained / "out", workdir / "out")
    return workdir


# ------------------------------------------------------------------------------------------ kills

def test_kill_inside_tensorflows_write_then_before_the_index(tmp_path):
    """SIGKILL while TF writes (its _temp folder exists), then while our renames are half done: each rerun
    cleans up and resumes after epoch 1, whose files never change."""
    workdir = workdir_with(tmp_path)
    run = compile_net(workdir, fault="kill-in-tf-write:2")
    assert run.returncode == -signal.SIGKILL, run
    assert "too late" not in run.stdout, run
    assert epochs_done(workdir) == [1]
    assert [n for n in os.listdir(workdir / "out") if n.endswith("_temp")], os.listdir(workdir / "out")
    before = fingerprint(complete_files(workdir))

    run = compile_net(workdir, fault="kill-before-index:2")
    assert run.returncode == -signal.SIGKILL, run
    assert "resuming after epoch 1" in run.stdout, run
    assert epochs_done(workdir) == [1]
    assert os.path.exists(workdir / "out" / "model.002.data-00000-of-00001")  # renamed; the index never came
    assert fingerprint(list(before)) == before

    assert_resumes(workdir, before, after_epoch=1)


def test_kill_at_a_random_moment(tmp_path):
    seed = int(os.environ.get("FAULT_SEED", time.time_ns() % 100000))
    delay = random.Random(seed).uniform(0.0, 1.2)
    workdir = workdir_with(tmp_path, num_seqs=1500)  # epochs of ~0.4 s, saves included
    proc = start(workdir)
    try:
        wait_for_line(proc, "epoch 1 ")
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = epochs_done(workdir)
    assert done and done == list(range(1, len(done) + 1)), (seed, done)
    before = fingerprint(complete_files(workdir))
    if done != [1, 2, 3]:
        assert_resumes(workdir, before, after_epoch=done[-1])
    else:
        assert fingerprint(list(before)) == before


# ------------------------------------------------------------------------------------------ two runs

def test_second_run_refuses_and_a_killed_holder_is_taken_over(trained, tmp_path):
    workdir = copy_of(trained, tmp_path)
    for name in glob.glob(str(workdir / "out" / "model.003.*")):
        os.unlink(name)  # so that the first run has an epoch to train
    before = fingerprint(complete_files(workdir))
    first = start(workdir, "++train", repr({"class": "Task12AXDataset", "num_seqs": 20000}))
    try:
        wait_for_line(first, "resuming after epoch 2")
        first.send_signal(signal.SIGSTOP)  # it holds the lock and writes nothing while stopped
        started = time.monotonic()
        second = compile_net(workdir)
        assert second.returncode == 2, second
        assert len(second.user_stderr) == 1, second
        line = second.user_stderr[0]
        assert line.startswith("error: model 'out/model' is in use by another run: ") and \
            f"process {first.pid} on host " in line and "running since " in line, line
        assert time.monotonic() - started < 30
        assert fingerprint(list(before)) == before
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    run = assert_resumes(workdir, before, after_epoch=2)
    assert f"took over the lock 'out/model.lock' left by a process that ended (pid {first.pid})" in run.stdout, run


# ------------------------------------------------------------------------------------------ damaged, read-only

def test_corrupt_newest_checkpoint_names_the_intact_previous_one(trained, tmp_path):
    workdir = copy_of(trained, tmp_path)
    index = workdir / "out" / "model.003.index"
    index.write_bytes(index.read_bytes()[:40])
    before = fingerprint(complete_files(workdir))
    run = compile_net(workdir, "++num_epochs", "4")
    assert run.returncode == 2 and len(run.user_stderr) == 1, run
    line = run.user_stderr[0]
    assert "out/model.003.index" in line and "damaged" in line, line
    assert "the previous checkpoint 'out/model.002' is intact" in line, line
    assert fingerprint(list(before)) == before
    assert epochs_done(workdir) == [1, 2, 3]


def read_only(path):
    """Makes folder `path` read-only for this user (bind mount as root); returns the undo, or None."""
    if os.geteuid() != 0:
        os.chmod(path, 0o555)
        return lambda: os.chmod(path, 0o755)
    done = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True)
    if done.returncode != 0:
        return None
    if subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", str(path)])
        return None
    return lambda: subprocess.run(["umount", str(path)], check=True)


def test_read_only_model_folder(trained, tmp_path):
    workdir = copy_of(trained, tmp_path)
    before = fingerprint(complete_files(workdir))
    undo = read_only(workdir / "out")
    if undo is None:
        pytest.skip("cannot make a read-only folder here (root without mount)")
    try:
        run = compile_net(workdir, "++num_epochs", "4")
        assert run.returncode == 2 and len(run.user_stderr) == 1, run
        assert run.user_stderr[0].startswith("error: the model folder 'out' is not writable"), run
        evaluated = compile_net(workdir, "--task", "eval")
        assert evaluated.returncode == 0, evaluated
        assert evaluated.stdout.splitlines()[-1].startswith("out/model.003  dev ce "), evaluated
        assert any("not writable" in line and line.startswith("notice: ") for line in evaluated.user_stderr)
    finally:
        undo()
    assert fingerprint(list(before)) == before


# ------------------------------------------------------------------------------------------ full disk

def tmpfs(path, size):
    path.mkdir()
    if os.environ.get("FAULT_NO_MOUNT") or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                      capture_output=True).returncode != 0:
        return None
    return lambda: subprocess.run(["umount", "-l", str(path)], check=True)


def test_full_disk(tmp_path):
    """A real full disk (tmpfs) after epoch 1: a clear error naming the last complete checkpoint; after
    freeing space the rerun resumes. Without mount: TF's ENOSPC error injected into the write."""
    workdir = workdir_with(tmp_path, num_seqs=1500)
    undo = tmpfs(workdir / "out", "2m")
    try:
        if undo is None:
            run = compile_net(workdir, fault="enospc:2")
        else:
            proc = start(workdir)
            try:
                wait_for_line(proc, "epoch 1 ")
                proc.send_signal(signal.SIGSTOP)
                before = fingerprint(complete_files(workdir))
                fd = os.open(workdir / "out" / "filler", os.O_WRONLY | os.O_CREAT)
                try:
                    written = 0
                    try:
                        while True:
                            written += os.write(fd, b"\0" * 4096)
                    except OSError:
                        pass
                    os.ftruncate(fd, written - 4096)  # one page left: the history fits, TF's write does not
                finally:
                    os.close(fd)
                proc.send_signal(signal.SIGCONT)
                run = finish(proc)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert run.returncode == 2 and len(run.user_stderr) == 1, run
        line = run.user_stderr[0]
        assert line.startswith("error: the disk is full: "), line
        assert "the last complete checkpoint is 'out/model.001' (intact)" in line, line
        assert "checkpoint 'out/model.002' could not be written" in line, line
        assert epochs_done(workdir) == [1]
        if undo is None:
            before = fingerprint(complete_files(workdir))
        assert fingerprint(list(before)) == before
        assert leftovers(workdir) == [], os.listdir(workdir / "out")  # the failed write cleaned up after itself
        if undo is not None:
            os.unlink(workdir / "out" / "filler")
        assert_resumes(workdir, before, after_epoch=1)
    finally:
        if undo is not None:
            undo()
