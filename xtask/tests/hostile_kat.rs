//! A hostile submitter against the PASS itself: fixture instances whose KEM is broken
//! print the published KAT text instead of computing it (tests/fixture/canned.h), read
//! from the shipped file, embedded at build time, or embedded obfuscated. None may
//! pass. Then two runs that share one build cache and rebuild at once.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

mod common;

use common::entry;
use common::fixture::*;
use xtask::evidence::schema::Summary;
use xtask::kat::verify::Status;

/// A fixture archive and its manifests, with a cache and evidence folder of its own.
struct Env {
    _tmp: tempfile::TempDir,
    cache: PathBuf,
    manifest: PathBuf,
    zip: PathBuf,
    root: PathBuf,
}

impl Env {
    fn new(insts: &[Inst]) -> Env {
        common::require_podman();
        let tmp = tempfile::tempdir().unwrap();
        let root = write_tree(&tmp.path().join("tree"), insts);
        // What a submitter would ship to get past a rule on names: the KAT text as a table.
        for (label, n, _) in insts {
            std::fs::write(root.join(label).join(COPY), model_text(*n)).unwrap();
        }
        let zip = tmp.path().join("Fixture KEM v1.zip");
        zip_tree(&tmp.path().join("tree"), &zip);
        let manifest = manifest_dir(&tmp.path().join("m"), &zip, false, insts);
        let root = tmp.path().to_owned();
        Env { cache: root.join("cache"), manifest, zip, root, _tmp: tmp }
    }

    fn spawn(&self, out: &str, extra: &[&str]) -> Child {
        let out = self.root.join(out);
        let mut args = vec!["verify", self.manifest.to_str().unwrap(), "--engine", "podman", "--timeout", "60"];
        args.extend(["--out", out.to_str().unwrap(), "--archive", self.zip.to_str().unwrap()]);
        args.extend(extra);
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(&args)
            .env("NGCC_CACHE", &self.cache)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn verify(&self, out: &str, extra: &[&str]) -> (Output, Summary) {
        let o = self.spawn(out, extra).wait_with_output().unwrap();
        eprintln!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        (o, common::summary(&self.root.join(out), "fixture-kem"))
    }
}

/// A copy of the KAT text under a name no rule on names knows.
const COPY: &str = "gf_tables.bin";

/// A C string literal of `text`, each byte XOR `key` (0: as it is).
fn c_string(text: &str, key: u8) -> String {
    let body: String = text.bytes().map(|b| format!("\\x{:02x}", b ^ key)).collect();
    format!("\"{body}\"")
}

fn canned(label: &'static str, how: u32) -> Inst {
    canned_from(label, how, &format!("KAT/KAT_KEM_{label}.txt"))
}

/// The same, reading the text from `file` of the instance's folder.
fn canned_from(label: &'static str, how: u32, file: &str) -> Inst {
    let text = model_text(16);
    let mut h = format!("#define _DEFAULT_SOURCE 1\n#define FIX_CANNED {how}\n#define FIX_BROKEN_DEC 1\n");
    // Where the text sits in the tree, as the build and the run would see it.
    h.push_str(&format!("#define CANNED_PATH \"/src/{label}/{file}\"\n"));
    h.push_str(&format!("#define CANNED_TEXT {}\n", c_string(&text, if how >= 4 { 0x5A } else { 0 })));
    (label, 16, h)
}

#[test]
fn printing_the_published_kat_text_never_passes() {
    let insts = vec![
        canned("hc-read", 1),
        canned("hc-incbin", 2),
        canned_from("hc-incbin-copy", 2, COPY),
        canned("hc-embed", 3),
        canned("hc-packed", 4),
        canned("hc-packed-kat", 5),
        ("fix-broken", 16, "#define FIX_BROKEN_DEC 1\n".to_owned()),
        ("fix-16", 16, String::new()),
    ];
    let env = Env::new(&insts);
    // Three instances at a time (--jobs): each is a few short containers.
    let (run, s) = env.verify("out", &["--jobs", "3"]);
    assert!(!run.status.success());
    let status = |l: &str| (entry(&s, l).status, entry(&s, l).message.clone().unwrap_or_default());
    // The control: the broken KEM, computed honestly, fails its own decapsulation check.
    assert_eq!(status("fix-broken").0, Status::Cryptofail, "{}", status("fix-broken").1);
    // No source tree in the run: the shipped file cannot be read, so the broken KEM runs.
    assert_eq!(status("hc-read").0, Status::Cryptofail, "{}", status("hc-read").1);
    // No KAT file in the build's inputs: .incbin finds nothing to embed.
    let (st, msg) = status("hc-incbin");
    assert_eq!(st, Status::Buildfail, "{msg}");
    assert!(msg.contains("KAT_KEM_hc-incbin.txt"), "{msg}");
    assert!(msg.contains("compiler output in local/kat/fixture-kem/hc-incbin.build.log"), "{msg}");
    // Nor its copy under another name: only what the preprocessor read reaches the build.
    let (st, msg) = status("hc-incbin-copy");
    assert_eq!(st, Status::Buildfail, "{msg}");
    assert!(msg.contains(COPY), "{msg}");
    // Embedded text gives the published digest, and is found in the library.
    let (st, msg) = status("hc-embed");
    assert_eq!(st, Status::Mismatch, "{msg}");
    assert_eq!(entry(&s, "hc-embed").actual_sha256, entry(&s, "hc-embed").expected_sha256, "the text was canned");
    assert!(msg.contains("libinstance.so contains record 0's") && msg.contains("not computed"), "{msg}");
    // Obfuscated text escapes the scan, not the replay on seeds the tool drew. The one
    // printed only "in the KAT program" prints in the replay too: it is the same program.
    for (label, why) in [("hc-packed", "lines for 3 records"), ("hc-packed-kat", "lines for 3 records")] {
        let (st, msg) = status(label);
        assert_eq!(st, Status::Mismatch, "{label}: {msg}");
        assert_eq!(entry(&s, label).actual_sha256, entry(&s, label).expected_sha256, "{label}: canned");
        assert!(msg.contains("replay on seeds drawn at run time failed") && msg.contains(why), "{label}: {msg}");
        assert!(!entry(&s, label).check.as_ref().unwrap().holds());
    }
    // The honest instance passes, with its replay and the seeds it used recorded.
    assert_eq!(status("fix-16").0, Status::Pass, "{}", status("fix-16").1);
    let replay = entry(&s, "fix-16").check.clone().expect("a replay");
    assert!(replay.holds(), "{}", replay.detail);
    assert_eq!(replay.seeds.len(), 3);
    assert!(replay.seeds.iter().all(|seed| seed.len() == 96));
    // Seeds are drawn anew for every run.
    let (_, again) = env.verify("out2", &["--instance", "fix-16"]);
    assert_ne!(entry(&again, "fix-16").check.as_ref().unwrap().seeds, replay.seeds);
}

/// Every build folder of the cache is finished: a record beside its files.
fn builds_are_finished(cache: &Path) {
    for b in std::fs::read_dir(cache.join("builds/fixture-kem")).unwrap().map(|b| b.unwrap().path()) {
        if b.is_dir() {
            assert!(b.join("build.json").is_file(), "unfinished build: {}", b.display());
        }
    }
}

#[test]
fn two_runs_sharing_a_cache_get_the_statuses_of_one() {
    let insts: Vec<Inst> = [("fix-a", 16), ("fix-b", 24)].into_iter().map(|(l, n)| (l, n, String::new())).collect();
    let env = Env::new(&insts);
    let (one, alone) = env.verify("alone", &[]);
    assert!(one.status.success());
    for round in 0..2u64 {
        let first = env.spawn("a", &["--rebuild"]);
        std::thread::sleep(std::time::Duration::from_millis(700 * round + 300));
        let second = env.spawn("b", &["--rebuild"]);
        for (child, out) in [(first, "a"), (second, "b")] {
            let o = child.wait_with_output().unwrap();
            eprintln!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
            assert!(o.status.success(), "round {round}, run {out}");
            let s = common::summary(&env.root.join(out), "fixture-kem");
            for i in &alone.instances {
                assert_eq!(entry(&s, &i.label).status, Status::Pass, "round {round}, run {out}");
                assert_eq!(entry(&s, &i.label).actual_sha256, i.actual_sha256);
            }
        }
        builds_are_finished(&env.cache);
    }
}
