//! The trial runner (`drivers/bench_runner.c`) attacked from inside the candidate's
//! process, as a hostile submitter would: a trial that leaves a busy child behind, one
//! that leaves a file for the next trial, one that tries to stop or kill the runner and
//! to write a forged frame into its stream, one that floods stderr. And `bench --resume`, per record.

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
    ];
    let (m, zip) = setup(tmp.path(), &insts);
    let out = tmp.path().join("out");
    let run = bench(&m, &zip, &out, &["--quick", "--op", "keygen"]);
    assert!(!run.status.success(), "the hostile trials are failures of their operations");
    let text = format!("{}{}", stdout(&run), String::from_utf8_lossy(&run.stderr));
    // The busy child: killed, and the operation fails naming it; no record. Both act when
    // the library loads, so the first run of the container already shows it: the one that
    // measures a trial process's start.
    assert!(text.contains("fixture-kem fix-leftover keygen: `/build/candidate < bench start` left"), "{text}");
    assert!(text.contains("process(es) behind when it ended (killed)"), "{text}");
    // The file it left for the next trial to read.
    assert!(text.contains("fixture-kem fix-residue keygen: `/build/candidate < bench start` left 1 file(s)"), "{text}");
    for label in ["fix-leftover", "fix-residue"] {
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
