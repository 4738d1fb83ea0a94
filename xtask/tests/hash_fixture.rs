//! Hash functions end to end on the hash fixture (tests/common/hash_fixture.rs): the four
//! KAT files pass against digests the Rust model derives (RustCrypto `sha2` and a padding
//! model over its compression function), every faulty instance gets the status of what
//! it does, in the file where it does it, and bench writes its 8 sizes beside the same-run
//! baselines. A hostile candidate's tricks are each one instance.

use std::process::{Command, Output};

mod common;

use common::entry;
use common::hash_fixture::{self, Case, ID};
use xtask::evidence::schema::{ContentControl, ContentVerdict, InstanceResult, KatFileResult, Record};
use xtask::kat::verify::Status;
use xtask::measure::stats;

fn file<'a>(r: &'a InstanceResult, part: &str) -> &'a KatFileResult {
    r.files.iter().find(|f| f.part == part).unwrap_or_else(|| panic!("{}: no file {part}", r.label))
}

fn status(r: &InstanceResult, part: &str) -> Option<Status> {
    file(r, part).status
}

fn message(r: &InstanceResult, part: &str) -> String {
    file(r, part).message.clone().unwrap_or_default()
}

fn xtask(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().unwrap();
    eprintln!("$ xtask {}\n{}{}", args.join(" "), common::stdout(&out), String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn the_four_files_pass_and_each_fault_is_named_in_its_file() {
    let c = Case::new();
    let good = c.verify(&["--instance", "h-good"]);
    assert_eq!(good.status.code(), Some(0));
    let s = common::summary(&c.out, ID);
    let g = entry(&s, "h-good");
    assert_eq!(g.status, Status::Pass);
    assert_eq!(g.files.len(), 4);
    for part in hash_fixture::PARTS {
        let f = file(g, part);
        assert_eq!(f.status, Some(Status::Pass), "{part}: {:?}", f.message);
        assert_eq!(f.actual_sha256.as_ref().unwrap().as_str(), hash_fixture::kat_digest(part, 256), "{part}");
        assert_eq!(f.file, format!("KAT_{part}_h-good.txt"));
        let log = common::layout(&c.out).kat_part_log(ID, "h-good", part);
        assert!(log.is_file(), "{log}");
    }
    assert!(g.commands[1].iter().any(|a| a == "-DNGCC_DIGEST_BITS=256"), "{:?}", g.commands[1]);
    let out = common::stdout(&good);
    assert!(out.contains("KAT_2_33_h-good.txt") && out.contains("KAT_Loop_h-good.txt"), "{out}");

    // The faulty ones without the 1 GiB file, and the Loop only where the fault is in it:
    // recorded as not checked, never a PASS of them.
    let verify = |parts: &str, labels: &[&str]| {
        let mut args = vec!["--kat-files", parts, "--jobs", "2"];
        labels.iter().for_each(|l| args.extend(["--instance", l]));
        let run = c.verify(&args);
        assert_eq!(run.status.code(), Some(1), "findings");
    };
    verify("2_12,2_23", &["h-tweak", "h-fail", "h-overrun", "h-overread", "h-width", "h-content"]);
    verify("2_12,2_23,Loop", &["h-slowloop", "h-cache"]);
    let s = common::summary(&c.out, ID);
    // One bit wrong at one length: 2_12 only.
    let t = entry(&s, "h-tweak");
    assert_eq!(
        (t.status, status(t, "2_12"), status(t, "2_23")),
        (Status::Mismatch, Some(Status::Mismatch), Some(Status::Pass))
    );
    assert_eq!((status(t, "2_33"), status(t, "Loop")), (None, None), "not checked, and said so");
    assert!(t.message.as_deref().unwrap().contains("2 of 4 KAT files checked; not checked: 2_33, Loop (--kat-files)"));
    // A non-zero return at one length.
    let f = entry(&s, "h-fail");
    assert_eq!((status(f, "2_12"), status(f, "2_23")), (Some(Status::Cryptofail), Some(Status::Pass)));
    assert!(message(f, "2_12").contains("CRYPTOFAIL: record=2049 call=CryptHash returned=1"), "{}", message(f, "2_12"));
    // Writing past the digest, and reading past the message (the guard page after it).
    let o = entry(&s, "h-overrun");
    assert_eq!(status(o, "2_12"), Some(Status::Overflow));
    assert!(message(o, "2_12").contains("record=777 call=CryptHash buffer=digest claimed=32 overrun=40"), "{o:?}");
    let r = entry(&s, "h-overread");
    assert_eq!((status(r, "2_12"), status(r, "2_23")), (Some(Status::Overflow), Some(Status::Overflow)));
    assert!(message(r, "2_12").contains("record=64 call=CryptHash buffer=msg claimed=8 overrun=9 guard-page"), "{r:?}");
    // Slow only in the Loop: the other files pass, the Loop hits the instance's 8 s.
    let l = entry(&s, "h-slowloop");
    assert_eq!((status(l, "2_12"), status(l, "Loop")), (Some(Status::Pass), Some(Status::Timeout)));
    assert!(message(l, "Loop").contains("timed out after 8 s"), "{l:?}");
    // A result cache keyed on the buffer: caught where the buffer is reused.
    let k = entry(&s, "h-cache");
    assert_eq!(
        (status(k, "2_12"), status(k, "2_23"), status(k, "Loop")),
        (Some(Status::Pass), Some(Status::Mismatch), Some(Status::Mismatch))
    );
    // A header that declares 512 bits for a 256-bit function: half the digest unwritten.
    let w = entry(&s, "h-width");
    assert_eq!(status(w, "2_12"), Some(Status::Cryptofail));
    assert!(message(w, "2_12").contains("unwritten=32 digest_bytes=64 (digest_bits=512"), "{w:?}");
    // Content-dependent speed is no KAT failure.
    assert_eq!(entry(&s, "h-content").status, Status::Pass);
    // The earlier run's h-good is kept beside them.
    assert_eq!(entry(&s, "h-good").status, Status::Pass);

    // The page: one row per KAT file, and the files not checked say so.
    let report = xtask(&["report", c.manifest.to_str().unwrap(), "--out", c.out.to_str().unwrap()]);
    assert!(report.status.success());
    let page = std::fs::read_to_string(common::layout(&c.out).report(ID)).unwrap();
    assert!(page.contains("| h-good | KAT_2_33_h-good.txt | guide | PASS |"), "{page}");
    assert!(page.contains("| h-tweak | KAT_2_12_h-tweak.txt | guide | MISMATCH |"), "{page}");
    assert!(
        page.contains("| h-tweak | KAT_2_33_h-tweak.txt | guide | not checked in this run (--kat-files) |"),
        "{page}"
    );
}

#[test]
fn a_file_that_needs_more_memory_than_the_limit_is_reported_with_the_limit() {
    let c = Case::with(&hash_fixture::INSTANCES[..1]);
    let run = c.verify(&["--kat-files", "2_33", "--memory", "512m"]);
    assert_eq!(run.status.code(), Some(1));
    let s = common::summary(&c.out, ID);
    let g = entry(&s, "h-good");
    assert_eq!(status(g, "2_33"), Some(Status::Crash));
    let m = message(g, "2_33");
    assert!(m.contains("limit 512m"), "{m}");
}

/// What every content control holds whatever the load: both classes measured, a
/// statistic on enough of them, and the rule it was judged by.
fn assert_well_formed(c: &ContentControl, what: &str) {
    assert!(c.taken.iter().all(|&n| n >= c.min_per_class), "{what}: {c:?}");
    let w = c.welch.as_ref().unwrap_or_else(|| panic!("{what}: no statistic: {c:?}"));
    assert!(
        w.t.is_finite() && w.n.iter().zip(c.taken).all(|(&n, taken)| n >= c.min_per_class && n <= taken),
        "{what}: {c:?}"
    );
    assert!(w.mean_ns.iter().all(|&m| m > 0.0) && c.ratio.is_some_and(|r| r > 0.0), "{what}: {c:?}");
    assert_eq!(c.verdict == ContentVerdict::Depends, w.t.abs() > c.threshold, "{what}: {c:?}");
    assert!(c.threshold == stats::THRESHOLD && c.classes.contains("drawn at random"), "{what}: {c:?}");
}

#[test]
fn bench_writes_every_size_beside_the_same_run_baselines_and_catches_caches_and_content() {
    let c = Case::with(&[hash_fixture::INSTANCES[0], hash_fixture::INSTANCES[6], hash_fixture::INSTANCES[8]]);
    let (m, o) = (c.manifest.to_str().unwrap(), c.out.to_str().unwrap());
    let archive = format!("{ID}={}", c.zip.display());
    let base = ["--engine", "podman", "--archive", &archive, "--out", o, "--quick", "--allow-unfixed-host"];
    let mut args = vec!["bench", m, "--instance", "h-good"];
    args.extend(base);
    assert!(xtask(&args).status.success());
    let layout = common::layout(&c.out);
    let read = |id: &str, label: &str, op: &str| -> Record {
        xtask::evidence::schema::read(&layout.record(id, label, op)).unwrap().unwrap_or_else(|| panic!("{label} {op}"))
    };
    let good: Vec<Record> =
        xtask::family::HASH_SIZES.iter().map(|n| read(ID, "h-good", &format!("hash_{n}"))).collect();
    let run = good[0].run_id.clone().unwrap();
    for label in ["SHA-256", "SHA-512", "SHA3-256", "SHA3-512"] {
        for n in xtask::family::HASH_SIZES {
            assert_eq!(read("baseline-hash", label, &format!("hash_{n}")).run_id.as_ref(), Some(&run), "same run");
        }
    }
    // The honest hash's control is well-formed at every size; its verdict is a timing
    // figure, which the machine's load may move, so it is not asserted here.
    for r in &good {
        let c = r.content.as_ref().unwrap_or_else(|| panic!("{}: no content control", r.op));
        assert_well_formed(c, &r.op.to_string());
    }

    // A cache is no timing; content-dependent speed is flagged.
    let mut args = vec!["bench", m, "--instance", "h-cache", "--instance", "h-content", "--op", "hash_4096"];
    args.extend(base);
    args.push("--no-baselines");
    let hostile = xtask(&args);
    assert_eq!(hostile.status.code(), Some(1));
    let err = String::from_utf8_lossy(&hostile.stderr);
    assert!(err.contains("h-cache hash_4096") && err.contains("previous call's digest"), "{err}");
    // 50 times slower on drawn content: far beyond what load does to interleaved classes.
    let content = read(ID, "h-content", "hash_4096").content.unwrap();
    assert_well_formed(&content, "h-content");
    assert_eq!(content.verdict, ContentVerdict::Depends, "{content:?}");
    assert!(content.welch.unwrap().t < -content.threshold, "drawn content is the slower");
    let check = xtask(&["evidence", "check", o]);
    assert!(check.status.success(), "the records read back byte for byte");

    // The page: per-size rows and the baselines of the same run (the site's chart is
    // tested on the golden set, tests/site.rs).
    assert!(xtask(&["report", m, "--out", o]).status.success());
    let page = std::fs::read_to_string(layout.report(ID)).unwrap();
    assert!(page.contains("| instance | message | mean ticks"), "{page}");
    assert!(page.contains("| h-good | 65536 B |"), "{page}");
    assert!(page.contains("| baseline | 32 B | 128 B |"), "{page}");
    // The honest sizes may be flagged too on a loaded machine; h-content must be among them.
    let depends = page.lines().find(|l| l.starts_with("Speed depends on the message content: "));
    assert!(depends.is_some_and(|l| l.contains("h-content 4096 B (t = ")), "{page}");
    assert!(page.contains("| h-good | 4096 B |") && page.contains(" × SHA3-256 |"), "{page}");
}

/// `xof = true`: an extendable-output instance is verified at its manifest's output
/// length (1280 bits, as Dragon-XOF-256's): the driver asks that length, the four-file
/// shape is the same, and the model's digests at that length PASS. `timed = false`: an
/// instance verified like any other is never timed, and bench and page say so.
#[test]
fn an_xof_is_verified_at_its_output_length_and_an_untimed_instance_is_never_timed() {
    const XOF: hash_fixture::HashInst = ("h-xof", "#define FIX_XOF 1\n", 1280, None);
    const UNTIMED: hash_fixture::HashInst = ("h-untimed", "", 256, None);
    let c = Case::with(&[XOF, UNTIMED]);
    let manifest = std::fs::read_to_string(&c.manifest).unwrap();
    let manifest = manifest
        .replace("label = \"h-xof\"\n", "label = \"h-xof\"\nxof = true\n")
        .replace("label = \"h-untimed\"\n", "label = \"h-untimed\"\ntimed = false\n");
    std::fs::write(&c.manifest, manifest).unwrap();
    // The 1 GiB file is left out (its shape is the others'): the model's digests of the
    // three other files, the XOF's at 1280 bits.
    let parts = ["2_12", "2_23", "Loop"];
    let mut k = String::from("# derived from the Rust model in tests/common/hash_fixture.rs\n");
    for part in parts {
        let mut s = hash_fixture::Strict::new();
        hash_fixture::kat_records_of(part, hash_fixture::Algo::Sha256Xof(1280), &mut |r| s.update(r.as_bytes()));
        k.push_str(&format!("{} strict h-xof/KAT_{part}_h-xof.txt\n", s.finish()));
        k.push_str(&format!("{} strict h-untimed/KAT_{part}_h-untimed.txt\n", hash_fixture::kat_digest(part, 256)));
    }
    std::fs::write(c.manifest.parent().unwrap().join(ID).join("kat.sha256"), k).unwrap();

    c.verify(&["--kat-files", "2_12,2_23,Loop", "--jobs", "2"]);
    let s = common::summary(&c.out, ID);
    let x = entry(&s, "h-xof");
    for part in parts {
        assert_eq!(status(x, part), Some(Status::Pass), "{part}: {}", message(x, part));
        assert_eq!(status(entry(&s, "h-untimed"), part), Some(Status::Pass), "{part}");
    }
    assert!(x.commands[1].iter().any(|a| a == "-DNGCC_DIGEST_BITS=1280"), "{:?}", x.commands[1]);
    let log = std::fs::read_to_string(common::layout(&c.out).kat_part_log(ID, "h-xof", "2_12")).unwrap();
    assert!(log.contains("Dst_Len = 1280\n"), "the output length the manifest gives");

    let (m, o) = (c.manifest.to_str().unwrap(), c.out.to_str().unwrap());
    let archive = format!("{ID}={}", c.zip.display());
    let bench = xtask(&[
        "bench",
        m,
        "--engine",
        "podman",
        "--archive",
        &archive,
        "--out",
        o,
        "--quick",
        "--allow-unfixed-host",
        "--op",
        "hash_32",
        "--no-baselines",
    ]);
    assert!(bench.status.success());
    assert!(common::stdout(&bench).contains("h-untimed: not timed: manifest"), "said by bench");
    let layout = common::layout(&c.out);
    assert!(layout.record(ID, "h-xof", "hash_32").is_file(), "the XOF is timed");
    assert!(!layout.record(ID, "h-untimed", "hash_32").exists(), "never timed");
    assert!(xtask(&["report", m, "--out", o]).status.success());
    let page = std::fs::read_to_string(layout.report(ID)).unwrap();
    assert!(page.contains("- h-untimed: not timed: manifest"), "{page}");
    assert!(page.contains("verified and timed at one output length: h-xof (1280 bits)"), "{page}");
}
