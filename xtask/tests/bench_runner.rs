//! The trial runner (`drivers/bench_runner.c`) attacked from inside the candidate's
//! process, as a hostile submitter would: a trial that leaves a busy child behind, one
//! that leaves a file for the next trial, one that tries to stop or kill the runner and
//! to write a forged frame into its stream, one that floods stderr, two that take their
//! input before `main` to learn which run they are in. And `bench --resume`, per record.

mod common;

use common::fixture::*;
use common::{record, stdout, xtask};
use xtask::evidence::schema::Credibility;

/// C code in the instance's header, which every source of the instance includes first.
const LEFTOVER: &str = "#define _DEFAULT_SOURCE 1\n#include <unistd.h>\n\
    __attribute__((constructor)) static void fix_leftover(void) {\n\
      if (fork() == 0) { volatile unsigned long spin = 0; for (;;) { spin++; } }\n}\n";
const RESIDUE: &str = "#define _DEFAULT_SOURCE 1\n#include <fcntl.h>\n#include <unistd.h>\n\
    __attribute__((constructor)) static void fix_residue(void) {\n\
      int fd = open(\"/tmp/fix-cache\", O_CREAT | O_WRONLY, 0600);\n  if (fd >= 0) { close(fd); }\n}\n";
const TAMPER: &str = "#define _DEFAULT_SOURCE 1\n#include <fcntl.h>\n#include <signal.h>\n#include <unistd.h>\n\
    __attribute__((constructor)) static void fix_tamper(void) {\n\
      static const char forged[] = \"ngcc-trial 0 exited 0 0 0 0 2\\n{}\";\n\
      int fd;\n  kill(1, SIGSTOP);\n  kill(1, SIGKILL);\n\
      fd = open(\"/proc/1/fd/1\", O_WRONLY);\n  if (fd >= 0) { if (write(fd, forged, sizeof forged - 1) < 0) {} close(fd); }\n\
      fd = open(\"/proc/1/mem\", O_RDWR);\n  if (fd >= 0) { close(fd); }\n}\n";

/// 1 MiB on stderr per trial: more than the runner keeps (64 KiB), none of it may stop it.
const NOISY: &str = "#define _DEFAULT_SOURCE 1\n#include <string.h>\n#include <unistd.h>\n\
    __attribute__((constructor)) static void fix_noisy(void) {\n\
      static char junk[1 << 16];\n  memset(junk, 'n', sizeof junk);\n\
      for (int i = 0; i < 16; i++) { if (write(2, junk, sizeof junk) < 0) { return; } }\n}\n";

/// The chameleon's first step: learn the run from its input before `main`. A thread
/// takes stdin's line and passes it on through a pipe put in place of fd 0 (the library
/// then knows whether it is timed); the other variant relays through a child process.
const STEAL_THREAD: &str = "#define _GNU_SOURCE 1\n#include <pthread.h>\n#include <string.h>\n#include <unistd.h>\n\
    static int fix_saved = -1, fix_pipe[2];\nvolatile int fix_timed;\n\
    static void fix_relay_line(void) {\n\
      char line[512]; size_t n = 0;\n\
      while (n < sizeof line - 1 && read(fix_saved, line + n, 1) == 1) { if (line[n++] == '\\n') { break; } }\n\
      fix_timed = strncmp(line, \"bench \", 6) == 0;\n\
      if (write(fix_pipe[1], line, n) < 0) { return; }\n}\n\
    static void *fix_relay(void *arg) { (void)arg; fix_relay_line(); close(fix_pipe[1]); return 0; }\n\
    __attribute__((constructor)) static void fix_steal(void) {\n\
      pthread_t t;\n  fix_saved = dup(0);\n\
      if (pipe(fix_pipe) != 0 || dup2(fix_pipe[0], 0) != 0) { return; }\n\
      if (FIX_STEAL_FORK) { if (fork() == 0) { fix_relay_line(); _exit(0); } close(fix_pipe[1]); return; }\n\
      pthread_create(&t, 0, fix_relay, 0);\n}\n";

fn steal(fork: bool) -> String {
    format!("#define FIX_STEAL_FORK {}\n{STEAL_THREAD}", u8::from(fork))
}

fn setup(tmp: &std::path::Path, insts: &[Inst]) -> (std::path::PathBuf, std::path::PathBuf) {
    write_tree(&tmp.join("tree"), insts);
    let zip = tmp.join("Fixture KEM v1.zip");
    zip_tree(&tmp.join("tree"), &zip);
    (manifest_dir(&tmp.join("m"), &zip, false, insts), zip)
}

fn bench(m: &std::path::Path, zip: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let base = ["bench", m.to_str().unwrap(), "--engine", "podman", "--archive", zip.to_str().unwrap()];
    let rest = ["--allow-unfixed-host", "--out", out.to_str().unwrap()];
    xtask(&[&base[..], &rest[..], extra].concat(), None)
}

#[test]
fn a_trial_cannot_leave_anything_for_the_next_nor_reach_the_runner() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![
        ("fix-16", 16, String::new()),
        ("fix-leftover", 16, LEFTOVER.into()),
        ("fix-residue", 16, RESIDUE.into()),
        ("fix-tamper", 16, TAMPER.into()),
        ("fix-noisy", 16, NOISY.into()),
        ("fix-steal", 16, steal(false)),
        ("fix-relay", 16, steal(true)),
    ];
    let (m, zip) = setup(tmp.path(), &insts);
    let out = tmp.path().join("out");
    let run = bench(&m, &zip, &out, &["--quick", "--op", "keygen"]);
    assert!(!run.status.success(), "the hostile trials are failures of their operations");
    let text = format!("{}{}", stdout(&run), String::from_utf8_lossy(&run.stderr));
    // The busy child: killed, and the operation fails naming it; no record. Both act when
    // the library loads, so the first run of the container already shows it: the one that
    // measures a trial process's start. The child is about when the trial waits for its
    // input, so the input is never sent (such a child could take it and pass it on).
    assert!(text.contains("fixture-kem fix-leftover keygen: `/build/candidate < bench start`: was killed before its input was sent: when it waited for it, it had"), "{text}");
    assert!(text.contains("other process(es) about, one of which could take it"), "{text}");
    // The file it left for the next trial to read.
    assert!(text.contains("fixture-kem fix-residue keygen: `/build/candidate < bench start` left 1 file(s)"), "{text}");
    // The chameleons that take the line before `main` and pass it on: never sent it.
    let killed = "was killed before its input was sent: when it waited for it, it";
    assert!(
        text.contains(&format!("fix-steal keygen: `/build/candidate < bench start`: {killed} had other threads")),
        "{text}"
    );
    let replaced =
        format!("fix-relay keygen: `/build/candidate < bench start`: {killed} read it from a stdin that was no longer");
    assert!(text.contains(&replaced), "{text}");
    for label in ["fix-leftover", "fix-residue", "fix-steal", "fix-relay"] {
        assert!(!common::layout(&out).record("fixture-kem", label, "keygen").exists(), "{label}: no record");
    }
    // SIGSTOP and SIGKILL to the runner, its stream and its memory through /proc: none
    // reaches it, so the trials run on and are checked like the honest twin's (their
    // times are not compared: records timed one after another are as far apart as the
    // machine's load puts them).
    let (honest, tamper) =
        (record(&out, "fixture-kem", "fix-16", "keygen"), record(&out, "fixture-kem", "fix-tamper", "keygen"));
    // Its stderr travels in the frame, capped: the trials of the noisy one are timed too.
    let noisy = record(&out, "fixture-kem", "fix-noisy", "keygen");
    for r in [&honest, &tamper, &noisy] {
        assert_eq!(r.host_check.credibility, Credibility::Checked, "{}: {:?}", r.label, r.host_check);
        assert!(r.trials.iter().all(|t| t.host_cpu_ns.is_some()), "{}: the host read every trial", r.label);
        assert_eq!(r.trials.iter().filter(|t| !t.trial.replaced).count(), 3);
    }
}

#[test]
fn resume_times_only_the_missing_records_and_never_keeps_an_edited_one() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![("fix-16", 16, String::new()), ("fix-32", 32, String::new())];
    let (m, zip) = setup(tmp.path(), &insts);
    let out = tmp.path().join("out");
    let started = |label: &str, op: &str| record(&out, "fixture-kem", label, op).started;
    // A run limited to keygen, as an interrupted one leaves it.
    assert!(bench(&m, &zip, &out, &["--quick", "--op", "keygen"]).status.success());
    let first = [started("fix-16", "keygen"), started("fix-32", "keygen")];
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let run = bench(&m, &zip, &out, &["--quick", "--resume"]);
    assert!(run.status.success());
    let text = stdout(&run);
    assert_eq!(text.matches("kept (--resume)").count(), 2, "{text}");
    assert_eq!([started("fix-16", "keygen"), started("fix-32", "keygen")], first, "keygen was kept");
    for label in ["fix-16", "fix-32"] {
        for op in ["enc", "dec"] {
            assert!(started(label, op) > first[0], "{label} {op} was timed now");
        }
    }
    // An edited record no longer matches the index: timed again, and said so.
    let path = common::layout(&out).record("fixture-kem", "fix-16", "enc");
    let edited = std::fs::read_to_string(&path).unwrap().replacen("\"quick\": true", "\"quick\": true ", 1);
    std::fs::write(&path, edited).unwrap();
    let before = started("fix-16", "enc");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let run = bench(&m, &zip, &out, &["--quick", "--resume"]);
    assert!(run.status.success());
    assert_eq!(stdout(&run).matches("kept (--resume)").count(), 5, "{}", stdout(&run));
    assert!(String::from_utf8_lossy(&run.stderr).contains("fix-16__enc.json: not as the evidence index has it"));
    assert!(started("fix-16", "enc") > before, "the edited record was timed again");
    assert_eq!(started("fix-32", "keygen"), first[1]);
    // Another plan (not quick) keeps nothing.
    let run = bench(&m, &zip, &out, &["--resume", "--op", "keygen", "--trials", "1", "--trial-target", "0.05"]);
    assert!(run.status.success());
    assert!(!stdout(&run).contains("kept (--resume)"), "{}", stdout(&run));
    assert!(started("fix-32", "keygen") > first[1]);
}
