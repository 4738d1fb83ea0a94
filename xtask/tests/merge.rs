//! Shards merged into one evidence set: the same files as one run over both
//! submissions, a passing index check, tampering named, conflicts refused.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{stdout, xtask};

fn files(root: &Path) -> BTreeSet<String> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(std::result::Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(root).unwrap().to_str().unwrap().to_owned())
        .collect()
}

fn verify(out: &Path, ids: &[&str]) {
    let mut args = vec!["verify"];
    args.extend(ids);
    args.extend(["--engine", "podman", "--out", out.to_str().unwrap()]);
    assert!(xtask(&args, None).status.success());
}

#[test]
fn merged_shards_equal_one_run_and_tampering_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, both, merged) =
        (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("both"), tmp.path().join("merged"));
    verify(&a, &["pqclean-ml-kem"]);
    verify(&b, &["pqclean-hqc"]);
    verify(&both, &["pqclean-ml-kem", "pqclean-hqc"]);

    let m = xtask(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "--out", merged.to_str().unwrap()], None);
    assert!(m.status.success());
    assert_eq!(files(&merged), files(&both));
    // The KAT texts are byte-reproducible; summaries differ only by their timestamps.
    for f in files(&both).iter().filter(|f| f.ends_with(".log")) {
        assert_eq!(std::fs::read(merged.join(f)).unwrap(), std::fs::read(both.join(f)).unwrap(), "{f}");
    }
    let check = xtask(&["evidence", "check", merged.to_str().unwrap()], None);
    assert!(check.status.success());

    // One changed byte in one record: named, non-zero exit.
    let victim = "local/kat/pqclean-hqc/summary.json";
    let original = std::fs::read(merged.join(victim)).unwrap();
    let mut bytes = original.clone();
    bytes[10] ^= 0x20;
    std::fs::write(merged.join(victim), bytes).unwrap();
    let bad = xtask(&["evidence", "check", merged.to_str().unwrap()], None);
    assert!(!bad.status.success());
    let text = stdout(&bad);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("changed  {victim}"));
    // The changed byte is in the key `schema`: the file is no summary of this harness.
    assert!(lines[1].starts_with("schema ") && lines[1].contains("is a KAT summary of schema none"), "{text}");
    assert_eq!(lines.len(), 2, "{text}");
    std::fs::write(merged.join(victim), original).unwrap();

    // A shard that fails its own check is not merged; nor are conflicting duplicates.
    std::fs::write(merged.join("local/new.txt"), "not indexed").unwrap();
    let refused = xtask(&["merge", merged.to_str().unwrap(), "--out", tmp.path().join("m2").to_str().unwrap()], None);
    assert!(!refused.status.success());
    std::fs::remove_file(merged.join("local/new.txt")).unwrap();
    xtask(&["evidence", "index", merged.to_str().unwrap()], None);
    let conflict = xtask(
        &["merge", a.to_str().unwrap(), merged.to_str().unwrap(), "--out", tmp.path().join("m3").to_str().unwrap()],
        None,
    );
    assert!(conflict.status.success(), "same files, same bytes: no conflict");
    // A PASS log changed and re-indexed: the PASS is derived again from it and refused.
    let log = "local/kat/pqclean-hqc/HQC-128.log";
    let mut changed = std::fs::read(b.join(log)).unwrap();
    changed[0] ^= 1;
    std::fs::write(merged.join(log), changed).unwrap();
    xtask(&["evidence", "index", merged.to_str().unwrap()], None);
    let m4 = tmp.path().join("m4");
    let forged = xtask(&["merge", b.to_str().unwrap(), merged.to_str().unwrap(), "--out", m4.to_str().unwrap()], None);
    let err = String::from_utf8_lossy(&forged.stderr);
    assert!(!forged.status.success() && err.contains("records PASS for HQC-128; refused"), "{err}");
    assert!(!m4.exists());
    std::fs::copy(b.join(log), merged.join(log)).unwrap();
    // A summary that differs from the other shard's: a conflict, nothing merged.
    let summary = std::fs::read_to_string(merged.join(victim)).unwrap();
    let other = summary.replacen("\"harness_commit\": \"", "\"harness_commit\": \"other-", 1);
    std::fs::write(merged.join(victim), other).unwrap();
    xtask(&["evidence", "index", merged.to_str().unwrap()], None);
    let conflict =
        xtask(&["merge", b.to_str().unwrap(), merged.to_str().unwrap(), "--out", m4.to_str().unwrap()], None);
    assert!(!conflict.status.success());
    let err = String::from_utf8_lossy(&conflict.stderr);
    assert!(err.contains("conflicting duplicates") && err.contains(victim), "{err}");
    assert!(!m4.exists());
}

/// A shard whose summary says PASS (the golden one, with the published digests of
/// `kat/pqclean-ml-kem/kat.sha256`) beside KAT logs that were never that text, then
/// re-indexed so its own index check passes: merge derives each PASS again from its
/// log and refuses the shard, naming the instance; nothing is merged. No container.
#[test]
fn a_shard_edited_to_pass_and_reindexed_is_refused() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/summary.json");
    for (forged, why) in [(Some("count = 0\nss = 00\n"), "gives sha256"), (Some(""), "is empty"), (None, "no KAT log")]
    {
        let tmp = tempfile::tempdir().unwrap();
        let shard = tmp.path().join("shard");
        let kat = shard.join("local/kat/pqclean-ml-kem");
        std::fs::create_dir_all(&kat).unwrap();
        std::fs::copy(&golden, kat.join("summary.json")).unwrap();
        for label in ["ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"] {
            if let Some(text) = forged {
                std::fs::write(kat.join(format!("{label}.log")), text).unwrap();
            }
        }
        assert!(xtask(&["evidence", "index", shard.to_str().unwrap()], None).status.success());
        assert!(xtask(&["evidence", "check", shard.to_str().unwrap()], None).status.success());
        let out = tmp.path().join("merged");
        let m = xtask(&["merge", shard.to_str().unwrap(), "--out", out.to_str().unwrap()], None);
        let err = String::from_utf8_lossy(&m.stderr);
        assert!(!m.status.success(), "{forged:?}: a forged PASS was merged");
        assert!(err.contains("records PASS for ML-KEM-512; refused") && err.contains(why), "{err}");
        assert!(files(&out).is_empty(), "nothing is merged");
    }
}
