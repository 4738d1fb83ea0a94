//! An archive's own extraction limits (`[source.limits]` in its manifest) and the
//! free-space check before extracting, on a small archive generated here: 3 MiB of
//! incompressible bytes, so that a limit of 2 MiB refuses it and one of 8 admits it.

use std::io::Write;
use std::path::{Path, PathBuf};

use camino::Utf8Path;
use xtask::compile::extract::{self as sources, ExtractLimits, BLOCK};
use xtask::compile::submission::{ArchiveLimits, Submission};

mod common;

const BIG: usize = 3 << 20;
const SMALL: &[u8] = b"int a;\n";

/// Bytes deflate cannot shrink (xorshift), so the archive is about as large as its tree.
fn noise(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// `Tree/src/big.bin` (3 MiB) and `Tree/src/a.c`, with their two folders.
fn archive(dir: &Path) -> PathBuf {
    let path = dir.join("big.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    zip.add_directory("Tree/", opts).unwrap();
    zip.add_directory("Tree/src/", opts).unwrap();
    zip.start_file("Tree/src/big.bin", opts).unwrap();
    zip.write_all(&noise(BIG)).unwrap();
    zip.start_file("Tree/src/a.c", opts).unwrap();
    zip.write_all(SMALL).unwrap();
    zip.finish().unwrap();
    path
}

/// A manifest for the archive with `limits` as its `[source.limits]`, whose build names a
/// file the archive lacks: once extraction is admitted, the plan check stops the run
/// (exit 2) before any engine is called.
fn manifest(dir: &Path, zip: &Path, limits: &str) -> PathBuf {
    let bytes = std::fs::metadata(zip).unwrap().len();
    let sha = common::sha256(&std::fs::read(zip).unwrap());
    let text = format!(
        "id = \"limits-fixture\"\nname = \"Extraction limits (test)\"\n\n[source]\nkind = \"archive\"\n\
         file = \"big.zip\"\nbytes = {bytes}\nsha256 = \"{sha}\"\n\n[source.limits]\n{limits}\n\n\
         [build]\nsources = [\"{{dir}}/not-in-the-archive.c\"]\n\n[kat]\nprogram = [\"driver:iccs_kem_kat.c\"]\n\
         file = \"k.txt\"\n\n[[instance]]\nlabel = \"L\"\ndir = \"Tree/src\"\n"
    );
    std::fs::create_dir_all(dir.join("limits-fixture")).unwrap();
    std::fs::write(dir.join("limits-fixture/kat.sha256"), format!("{} strict L/k.txt\n", "a".repeat(64))).unwrap();
    let path = dir.join("limits-fixture.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `verify` of the manifest with its own cache; (exit code, stderr).
fn verify(dir: &Path, manifest: &Path, zip: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let (m, z, out) = (manifest.to_str().unwrap(), zip.to_str().unwrap(), dir.join("out"));
    let mut args = vec!["verify", m, "--engine", "podman", "--archive", z, "--out", out.to_str().unwrap()];
    args.extend(extra);
    let run = common::xtask(&args, Some(&dir.join("cache")));
    (run.status.code(), String::from_utf8_lossy(&run.stderr).into_owned())
}

/// The manifest's limit decides for this archive only, and the command line wins over it.
#[test]
fn the_manifest_limit_admits_or_refuses_its_archive() {
    let t = tempfile::tempdir().unwrap();
    let zip = archive(t.path());
    assert!(std::fs::metadata(&zip).unwrap().len() > (BIG as u64) - 4096, "the bytes must not compress");

    let below = manifest(t.path(), &zip, "max_extract_mib = 2");
    let (code, err) = verify(t.path(), &below, &zip, &[]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("cannot extract") && err.contains("it declares more than 2 MiB"), "{err}");
    assert!(err.contains("max_extract_mib") && err.contains("[source.limits]"), "{err}");
    let sources = t.path().join("cache/sources");
    let trees = || std::fs::read_dir(&sources).map_or(0, |d| d.filter(|e| e.as_ref().unwrap().path().is_dir()).count());
    assert_eq!(trees(), 0, "a refused archive leaves no tree");

    // The command line's limit wins over the manifest's.
    let (code, err) = verify(t.path(), &below, &zip, &["--max-extract-mib", "8"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not-in-the-archive.c not found"), "extracted, then stopped at the plan: {err}");

    let above = manifest(t.path(), &zip, "max_extract_mib = 8");
    std::fs::remove_dir_all(&sources).unwrap();
    let (code, err) = verify(t.path(), &above, &zip, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not-in-the-archive.c not found") && !err.contains("cannot extract"), "{err}");
    assert_eq!(trees(), 1, "the admitted archive's tree is cached");
    // What the tool read from this manifest: 8 MiB for this archive, the default elsewhere.
    let sub = Submission::load(above.to_str().unwrap()).unwrap();
    let xtask::compile::submission::SourceSpec::Archive { limits, .. } = &sub.source else { panic!() };
    assert_eq!(ExtractLimits::resolve(&ArchiveLimits::default(), limits.as_ref()).max_bytes, 8 << 20);
}

/// The space needed comes from the declared sizes; with less free space than that the
/// extraction stops before writing anything, naming the archive, the bytes and the folder.
#[test]
fn too_little_free_space_stops_the_extraction_before_anything_is_written() {
    let t = tempfile::tempdir().unwrap();
    let zip = archive(t.path());
    let file = std::fs::File::open(&zip).unwrap();
    let limits = ExtractLimits { max_bytes: 8 << 20, ..ExtractLimits::DEFAULT };
    let declared = sources::declared(&file, "big.zip", limits).unwrap();
    // Two folders and the small file take a block each; 3 MiB is whole blocks.
    let need = (2 + 1) * BLOCK + (BIG as u64).div_ceil(BLOCK) * BLOCK;
    assert_eq!((declared.bytes, declared.entries, declared.need), ((BIG + SMALL.len()) as u64, 4, need));

    let cache = Utf8Path::from_path(t.path()).unwrap().join("cache");
    let dest = cache.join("tree");
    std::fs::create_dir_all(&dest).unwrap();
    let e = sources::unpack_with_free(&file, "big.zip", &dest, limits, Some(need - 1)).unwrap_err();
    let e = format!("{e:#}");
    for said in ["big.zip", &format!("{need} bytes"), &format!("{} bytes", need - 1), cache.as_str(), "NGCC_CACHE"] {
        assert!(e.contains(said), "{said}: {e}");
    }
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 0, "nothing was written");

    sources::unpack_with_free(&file, "big.zip", &dest, limits, Some(need)).unwrap();
    assert_eq!(std::fs::read(dest.join("Tree/src/a.c")).unwrap(), SMALL);
    assert_eq!(std::fs::metadata(dest.join("Tree/src/big.bin")).unwrap().len(), BIG as u64);
}
