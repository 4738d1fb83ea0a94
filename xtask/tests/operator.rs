//! What an operator and a script meet before any work starts: distinct exit codes,
//! values checked (with the valid choices and the nearest one) before any engine is
//! called, every missing archive named at once, `--json` on stdout. No container: a
//! fake `podman` and `docker` on PATH record every call, and there must be none.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use xtask::evidence::schema::ErrorReport;

/// A PATH whose `podman` and `docker` only log that they were called.
struct FakeEngines {
    dir: tempfile::TempDir,
}

impl FakeEngines {
    fn new() -> FakeEngines {
        let dir = tempfile::tempdir().unwrap();
        for engine in ["podman", "docker"] {
            let path = dir.path().join(engine);
            let log = dir.path().join("calls");
            std::fs::write(&path, format!("#!/bin/sh\necho \"{engine} $*\" >> '{}'\nexit 1\n", log.display())).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        FakeEngines { dir }
    }

    fn run(&self, args: &[&str]) -> Output {
        let path = format!("{}:{}", self.dir.path().display(), std::env::var("PATH").unwrap());
        let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).env("PATH", path).output().unwrap();
        eprintln!("$ xtask {}\n{}{}", args.join(" "), common::stdout(&out), String::from_utf8_lossy(&out.stderr));
        out
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("calls")).unwrap_or_default()
    }

    /// Refused with exit 2, a message containing every `needles`, and no engine call.
    fn refused(&self, args: &[&str], needles: &[&str]) {
        let out = self.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: no {n:?} in {err}");
        }
        assert_eq!(self.calls(), "", "{args:?} called an engine before refusing");
    }
}

fn tmp_out(tmp: &Path) -> PathBuf {
    tmp.join("never-made")
}

#[test]
fn wrong_values_exit_2_before_any_engine_is_called_with_the_nearest_choice() {
    let f = FakeEngines::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp_out(tmp.path());
    let out_s = out.to_str().unwrap();
    let e = ["--engine", "podman", "--out", out_s];
    f.refused(
        &[&["verify", "pqclean-ml-kem", "--instance", "ML-KEM-51"], &e[..]].concat(),
        &["ML-KEM-51", "did you mean `ML-KEM-512`?", "ML-KEM-1024, ML-KEM-512, ML-KEM-768"],
    );
    f.refused(
        &[&["verify", "kem-7"], &e[..]].concat(),
        &["did you mean `kem-07`?", "known: baseline-hash, hash-01, kem-01"],
    );
    f.refused(&[&["bench", "pqclean-ml-kem", "--op", "kegen"], &e[..]].concat(), &["did you mean `keygen`?"]);
    f.refused(&[&["bench", "pqclean-ml-dsa", "--op", "enc"], &e[..]].concat(), &["keygen, sign, verify, sign_msgs"]);
    f.refused(&[&["verify", "--system", "arm1"], &e[..]].concat(), &["did you mean `arm_1`?"]);
    f.refused(&[&["verify", "pqclean-ml-kem", "--memory", "5x"], &e[..]].concat(), &["not a size"]);
    f.refused(&[&["verify", "pqclean-ml-kem", "--toolchain", "debian13"], &e[..]].concat(), &["`debian-13`"]);
    f.refused(
        &["campaign", "kem-07", "--engine", "podman", "--out", out_s, "--archive", "kem-03=x.zip"],
        &["not selected"],
    );
    assert!(!out.exists(), "a refused run leaves no --out behind");

    // --out naming a file: said plainly, and the file is untouched.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "mine").unwrap();
    f.refused(
        &["verify", "pqclean-ml-kem", "--engine", "podman", "--out", file.to_str().unwrap()],
        &["is not a folder"],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

#[test]
fn every_missing_archive_is_named_at_once_in_verify_and_campaign() {
    let f = FakeEngines::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp_out(tmp.path());
    for cmd in ["verify", "campaign"] {
        let args = [cmd, "--system", "arm_1", "--engine", "podman", "--out", out.to_str().unwrap()];
        let needles = [
            "3 archive(s) missing",
            "BAG-Loong.zip (16321958 bytes, SHA-256 2795fd57d3d00791652256362b4a21982116d3aad1fb63633dac923e0e76e05b)",
            "BAG-Piglet.zip (10529983 bytes",
            "BRQC.zip (9739992 bytes",
            "published at https://",
            "--archive ID=PATH",
        ];
        f.refused(&args, &needles);
    }
    assert!(!out.exists());
}

#[test]
fn results_usage_and_failures_have_distinct_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    std::fs::create_dir_all(dir.join("local")).unwrap();
    std::fs::write(dir.join("local/a.json"), "{}").unwrap();
    let d = dir.to_str().unwrap();
    assert_eq!(common::xtask(&["evidence", "index", d], None).status.code(), Some(0));
    assert_eq!(common::xtask(&["evidence", "check", d], None).status.code(), Some(0));
    std::fs::write(dir.join("local/a.json"), "{\"x\":1}").unwrap();
    let changed = common::xtask(&["evidence", "check", d], None);
    assert_eq!(changed.status.code(), Some(1), "evidence not matching its index is a finding");
    // A folder nobody can create (not even root): the machine refused, exit 3.
    let f = FakeEngines::new();
    let out = f.run(&["verify", "pqclean-ml-kem", "--engine", "podman", "--out", "/proc/ngcc-out"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    // clap's own usage errors are 2 as well.
    assert_eq!(common::xtask(&["verify", "--no-such-flag"], None).status.code(), Some(2));
    let help = common::xtask(&["--help"], None);
    let text = common::stdout(&help);
    assert!(text.contains("Usage: cargo xtask") && text.contains("130 interrupted"), "{text}");
}

#[test]
fn json_goes_to_stdout_alone_and_parses_back() {
    #[derive(serde::Deserialize)]
    struct Listing {
        submissions: Vec<Listed>,
    }
    #[derive(serde::Deserialize)]
    struct Listed {
        id: String,
    }
    let list = common::xtask(&["list", "--json"], None);
    let listing: Listing = serde_json::from_slice(&list.stdout).expect("list --json is JSON");
    assert!(listing.submissions.iter().any(|s| s.id == "pqclean-ml-dsa"));
    // A refusal under --json is still one JSON document on stdout, with its exit code.
    let f = FakeEngines::new();
    let out = f.run(&["verify", "kem-7", "--engine", "podman", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let e: ErrorReport = serde_json::from_slice(&out.stdout).expect("the error is JSON");
    assert_eq!(e.exit_code, 2);
    assert!(e.error.contains("did you mean `kem-07`?"), "{}", e.error);
    // -q says nothing on success but the JSON.
    let quiet = common::xtask(&["list", "--json", "-q"], None);
    assert!(quiet.stderr.is_empty());
    serde_json::from_slice::<Listing>(&quiet.stdout).unwrap();
}
