//! Bad input a user (or a hostile submission) can hand the tool: each gives an error
//! naming the file (and line), a non-zero exit, no panic, and no container work.

use std::io::Write;
use std::path::{Path, PathBuf};

mod common;

use common::fixture::*;

struct Case {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    zip: PathBuf,
    manifest: PathBuf,
}

fn case() -> Case {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    let insts: Vec<Inst> = vec![("fix-16", 16, String::new())];
    write_tree(&dir.join("tree"), &insts);
    let zip = dir.join("Fixture KEM v1.zip");
    zip_tree(&dir.join("tree"), &zip);
    let manifest = manifest_dir(&dir.join("m"), &zip, false, &insts);
    Case { _tmp: tmp, dir, zip, manifest }
}

impl Case {
    fn edit(&self, from: &str, to: &str) {
        let text = std::fs::read_to_string(&self.manifest).unwrap();
        assert!(text.contains(from), "{from}");
        std::fs::write(&self.manifest, text.replacen(from, to, 1)).unwrap();
    }

    fn kat(&self) -> PathBuf {
        self.manifest.parent().unwrap().join("fixture-kem/kat.sha256")
    }

    /// `verify` with the engine named but never reached: every check comes first.
    fn verify(&self, extra: &[&str]) -> String {
        self.verify_code(extra).1
    }

    /// `verify` as above, refused as a usage error (exit 2): the manifest is wrong.
    fn usage(&self, extra: &[&str]) -> String {
        let (code, err) = self.verify_code(extra);
        assert_eq!(code, Some(2), "{err}");
        err
    }

    fn verify_code(&self, extra: &[&str]) -> (Option<i32>, String) {
        let mut args = vec!["verify", self.manifest.to_str().unwrap(), "--engine", "podman"];
        args.extend(["--archive", self.zip.to_str().unwrap(), "--out"]);
        let out = self.dir.join("out");
        args.push(out.to_str().unwrap());
        args.extend(extra);
        refused_code(&args)
    }
}

/// Run xtask, expect a clean refusal, return stderr.
fn refused(args: &[&str]) -> String {
    refused_code(args).1
}

/// `refused`, with the exit status.
fn refused_code(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("$ xtask {}\n{err}", args.join(" "));
    assert!(!out.status.success(), "accepted: {args:?}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("localhost/ngcc-repro/"), "image work started: {err}");
    (out.status.code(), err)
}

fn rezip(zip: &Path, bytes: &[u8]) {
    std::fs::write(zip, bytes).unwrap();
}

/// Pin the case's archive anew (after it was replaced).
fn repin(c: &Case) {
    let bytes = std::fs::read(&c.zip).unwrap();
    let text = std::fs::read_to_string(&c.manifest).unwrap();
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("sha256 = ") {
                format!("sha256 = \"{}\"\n", common::sha256(&bytes))
            } else if l.starts_with("bytes = ") {
                format!("bytes = {}\n", bytes.len())
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(&c.manifest, text).unwrap();
}

#[test]
fn bad_manifests_are_refused_with_file_line_and_column() {
    let c = case();
    let m = c.manifest.to_str().unwrap().to_owned();
    let sha = common::sha256(&std::fs::read(&c.zip).unwrap());
    c.edit(&sha, "abc");
    let e = c.usage(&[]);
    assert!(e.contains(&m) && e.contains("line 4, column 1") && e.contains("\"abc\" is not a SHA-256"), "{e}");
    c.edit("\"abc\"", &format!("\"{sha}\""));

    c.edit("sources = [\"{dir}/*.c\"]", "sources = [\"{dir}/../*.c\"]");
    let e = c.usage(&[]);
    assert!(e.contains(&format!("{m}:13:")) && e.contains("has `..`"), "{e}");
    c.edit("{dir}/../*.c", "{dir}/*.c");

    c.edit("\"{dir}/KAT_KEM.c\"", "\"{dir}/./KAT_KEM.c\"");
    let e = c.usage(&[]);
    assert!(e.contains(&format!("{m}:15:")) && e.contains("has a `.` component"), "{e}");
    c.edit("{dir}/./KAT_KEM.c", "{dir}/src/KAT_KEM.c");
    let e = c.usage(&[]);
    assert!(e.contains(&format!("{m}:15:")) && e.contains("matches no file"), "{e}");
}

#[test]
fn bad_instance_labels_are_usage_errors_naming_the_line() {
    let c = case();
    let m = c.manifest.to_str().unwrap().to_owned();
    let long = "x".repeat(65);
    let too_long = "must have 1 to 64 characters, not 65";
    for (bad, why) in [("fix/16", "holds '/'"), ("fix 16", "holds ' '"), (long.as_str(), too_long)] {
        c.edit("label = \"fix-16\"", &format!("label = \"{bad}\""));
        let e = c.usage(&[]);
        assert!(e.contains(&format!("{m}:")) && e.contains(&format!("instance label \"{bad}\"")), "{e}");
        assert!(e.contains(why), "{e}");
        c.edit(&format!("label = \"{bad}\""), "label = \"fix-16\"");
    }
    // A manifest that is not TOML at all is the operator's to fix as well.
    c.edit("[build]", "[build");
    assert!(c.usage(&[]).contains(&format!("invalid manifest {m}")));
}

#[test]
fn kat_manifests_that_would_pass_anything_are_refused() {
    let c = case();
    let kat = c.kat().to_str().unwrap().to_owned();
    let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    std::fs::write(&kat, format!("{empty} nolen:0 fix-16/KAT_KEM_fix-16.txt\n")).unwrap();
    let e = c.usage(&[]);
    assert!(e.contains(&kat) && e.contains("line 1") && e.contains("empty text"), "{e}");
    std::fs::write(&kat, format!("{} nolen:0 fix-16/KAT_KEM_fix-16.txt\n", "a".repeat(64))).unwrap();
    assert!(c.usage(&[]).contains(":0` covers no record"));
    std::fs::write(&kat, format!("{} strict fix-16/other.txt\n", "a".repeat(64))).unwrap();
    let e = c.usage(&[]);
    assert!(e.contains(&format!("{kat}:1")) && e.contains("KAT_KEM_fix-16.txt"), "{e}");
    std::fs::write(&kat, format!("# x\n{} strict nosuch/KAT_KEM_fix-16.txt\n", "a".repeat(64))).unwrap();
    assert!(c.usage(&[]).contains(&format!("{kat}:2: fixture-kem has no instance \"nosuch\"")));
}

#[test]
fn hostile_archives_are_refused_before_anything_is_built() {
    let c = case();
    // Random bytes, pinned: not parsed as tar, no binary in the message.
    rezip(&c.zip, &(0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect::<Vec<_>>());
    repin(&c);
    let e = c.verify(&[]);
    assert!(e.contains("is neither a zip nor a tar archive (it begins"), "{e}");
    assert!(e.is_ascii(), "{e}");
    // A zip bomb: 64 MiB of zeros in a small archive, beyond the default ratio.
    let file = std::fs::File::create(&c.zip).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    zip.start_file("bomb.bin", zip::write::SimpleFileOptions::default()).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..64 {
        zip.write_all(&zeros).unwrap();
    }
    zip.finish().unwrap();
    repin(&c);
    // Refused from the sizes it declares, before a byte is written.
    let e = c.verify(&[]);
    assert!(e.contains("declares more than"), "{e}");
    let e = c.verify(&["--max-ratio", "100000", "--max-extract-mib", "16"]);
    assert!(e.contains("declares more than 16 MiB"), "{e}");
}

#[test]
fn bad_paths_and_plan_flags_are_refused_up_front() {
    let c = case();
    let file = c.dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let m = c.manifest.to_str().unwrap();
    let e = refused(&["verify", m, "--engine", "podman", "--source-dir", file.to_str().unwrap()]);
    assert!(e.contains(&format!("--source-dir {} is not a folder", file.display())), "{e}");
    let e = refused(&["verify", m, "--engine", "podman", "--out", "/proc/no-evidence-here"]);
    assert!(e.contains("--out /proc/no-evidence-here"), "{e}");
    let under_file = format!("{}/out", file.display());
    let e = refused(&["verify", m, "--engine", "podman", "--out", &under_file]);
    assert!(e.contains(&format!("--out {under_file}")), "{e}");
    for flags in [&["--iterations", "0"][..], &["--trials", "0"]] {
        let e = refused(&[&["bench", m, "--engine", "podman"][..], flags].concat());
        assert!(e.contains("0 is not in 1.."), "{e}");
    }
    let e = refused(&["bench", m, "--engine", "podman", "--cpu", "4095", "--allow-unfixed-host"]);
    assert!(e.contains("--cpu 4095: this machine has no CPU 4095"), "{e}");
}

/// A cached source tree edited on disk (the poisoned `drng.c`) is named, discarded
/// and extracted again from the archive, checked anew. The engine is a fake that fails,
/// so each run stops (exit 3) right after the sources are obtained: no container runs.
#[test]
fn an_edited_cached_tree_is_named_and_extracted_again() {
    let c = case();
    let (bin, cache) = (c.dir.join("bin"), c.dir.join("cache"));
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(bin.join("podman"), "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(bin.join("podman"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let run = || {
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let (m, zip, out) = (c.manifest.to_str().unwrap(), c.zip.to_str().unwrap(), c.dir.join("out"));
        let args = ["verify", m, "--engine", "podman", "--archive", zip, "--out", out.to_str().unwrap()];
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"));
        let run = cmd.args(args).env("PATH", path).env("NGCC_CACHE", &cache).output().unwrap();
        let err = String::from_utf8_lossy(&run.stderr).into_owned();
        eprintln!("$ xtask {}\n{err}", args.join(" "));
        assert_eq!(run.status.code(), Some(3), "the fake engine fails the run: {err}");
        err
    };
    assert!(!run().contains("made again"));
    let sha = common::sha256(&std::fs::read(&c.zip).unwrap());
    let drng = cache.join("sources").join(&sha).join(WRAP).join(ROOT).join("fix-16/drng.c");
    let genuine = std::fs::read(&drng).unwrap();
    std::fs::write(&drng, "/* not the official drng.c */\n").unwrap();
    let err = run();
    let named = format!("{WRAP}/{ROOT}/fix-16/drng.c\" changed");
    assert!(err.contains("is made again: its files changed since it was made") && err.contains(&named), "{err}");
    assert_eq!(std::fs::read(&drng).unwrap(), genuine);
    assert!(!run().contains("made again"), "the tree made again is reused");
}
