//! An archive whose code sits in a nested rar (`[source] nested`, sign-09 DOVE): the tool
//! does not extract rar, so `verify` from the archive alone is refused before anything is
//! extracted or any engine called (exit 2, naming the nested archive and the way out),
//! `--source-dir` takes the unpacked tree instead, and `list` says it of sign-09.

use std::io::Write;
use std::path::{Path, PathBuf};

mod common;

const INNER: &str = "Impl/Code-x86-reference.rar";

/// `Impl/Code-x86-reference.rar` (a rar signature and nothing a rar tool would accept).
fn archive(dir: &Path) -> PathBuf {
    let path = dir.join("nested.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    zip.add_directory("Impl/", opts).unwrap();
    zip.start_file(INNER, opts).unwrap();
    zip.write_all(b"Rar!\x1a\x07\x01\x00 not a real rar\n").unwrap();
    zip.finish().unwrap();
    path
}

fn manifest(dir: &Path, zip: &Path) -> PathBuf {
    let bytes = std::fs::metadata(zip).unwrap().len();
    let sha = common::sha256(&std::fs::read(zip).unwrap());
    let text = format!(
        "id = \"nested-fixture\"\nname = \"Nested rar (test)\"\n\n[source]\nkind = \"archive\"\n\
         file = \"nested.zip\"\nbytes = {bytes}\nsha256 = \"{sha}\"\nroot = \"Impl/Code-x86-reference/Ref\"\n\
         nested = \"{INNER}\"\n\n[build]\nsources = [\"{{dir}}/sign.c\"]\n\n[kat]\n\
         program = [\"driver:iccs_sig_kat.c\"]\nfile = \"k.txt\"\n\n[[instance]]\nlabel = \"L\"\ndir = \"L\"\n"
    );
    std::fs::create_dir_all(dir.join("nested-fixture")).unwrap();
    std::fs::write(dir.join("nested-fixture/kat.sha256"), format!("{} strict L/k.txt\n", "a".repeat(64))).unwrap();
    let path = dir.join("nested-fixture.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_nested_rar_is_refused_with_the_way_out_and_a_source_dir_is_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let zip = archive(tmp.path());
    let m = manifest(tmp.path(), &zip);
    let cache = tmp.path().join("cache");
    let out = tmp.path().join("out");
    let (m, zip, out) = (m.to_str().unwrap(), zip.to_str().unwrap(), out.to_str().unwrap());
    // `--engine podman` on a machine without it would be exit 3: the refusal comes first.
    let run = common::xtask(&["verify", m, "--engine", "podman", "--archive", zip, "--out", out], Some(&cache));
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("nested.zip holds its code in a nested archive, {INNER}")), "{err}");
    assert!(err.contains("--source-dir nested-fixture=DIR"), "{err}");
    assert!(!cache.join("sources").exists(), "nothing was extracted");

    // The tree unpacked by hand is taken: the run goes on to the plan, which finds no sign.c.
    let dir = tmp.path().join("unpacked/Impl/Code-x86-reference/Ref/L");
    std::fs::create_dir_all(&dir).unwrap();
    let given = format!("nested-fixture={}", tmp.path().join("unpacked").display());
    let run = common::xtask(&["verify", m, "--engine", "podman", "--source-dir", &given, "--out", out], Some(&cache));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!err.contains("nested archive"), "{err}");
    assert!(err.contains("sign.c"), "{err}");
}

#[test]
fn list_says_sign_09_needs_its_nested_rar_unpacked() {
    let run = common::xtask(&["list"], None);
    let text = common::stdout(&run) + &String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{text}");
    let line = text.lines().find(|l| l.contains("not runnable from the archive: sign-09")).unwrap_or_default();
    assert!(line.contains("Digital_Signature-DOVE-x86-reference_implementation.rar"), "{text}");
}
