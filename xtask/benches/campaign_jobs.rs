//! Campaign wall time with `--jobs 1` against `--jobs 2` (issue 19): `cargo bench -p
//! xtask --bench campaign_jobs`. Needs podman and the Debian 13 image. Runs `campaign
//! --no-bench --archives DIR` over the field fixture's archive (tests/common/field.rs),
//! its eight instances that pass, from an empty build cache each time (the image locks
//! copied in), and prints both wall times and their ratio. A figure, not a target: the
//! machine's other load moves it.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

#[path = "../tests/common/mod.rs"]
mod common;

use common::field::Case;

/// The instances that pass (the slow and capped ones are the test's business).
const PASSING: &[&str] = &["f-plain", "f-asm", "f-gmp", "f-arch", "f-100", "f-3", "f-owndrng", "f-known"];

fn campaign(c: &Case, jobs: &str, cache: &Path) -> f64 {
    let folder = c.tmp.path().join("downloads");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(&c.zip, folder.join("field.zip")).unwrap();
    std::fs::copy(&c.api, folder.join("api.zip")).unwrap();
    let manifest = c.tmp.path().join(format!("jobs-{jobs}"));
    std::fs::create_dir_all(manifest.join("field-kem")).unwrap();
    // Only the passing instances: the manifest without the others.
    let text = std::fs::read_to_string(&c.manifest).unwrap();
    let kept: Vec<&str> =
        text.split("\n[[instance]]").filter(|b| !b.contains("f-hang") && !b.contains("f-big")).collect();
    std::fs::write(manifest.join("field-kem.toml"), kept.join("\n[[instance]]")).unwrap();
    let kat = c.manifest.parent().unwrap().join("field-kem/kat.sha256");
    let lines: String = std::fs::read_to_string(kat)
        .unwrap()
        .lines()
        .filter(|l| PASSING.iter().any(|p| l.contains(&format!(" {p}/"))) || l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(manifest.join("field-kem/kat.sha256"), lines).unwrap();
    let out = c.tmp.path().join(format!("out-{jobs}"));
    let m = manifest.join("field-kem.toml");
    let args = ["campaign", m.to_str().unwrap(), "--engine", "podman", "--no-bench", "--jobs", jobs, "--archives"];
    let start = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .arg(&folder)
        .arg("--out")
        .arg(&out)
        .env("NGCC_CACHE", cache)
        .env("NGCC_REPRO_ICCS_API", &c.pin)
        .output()
        .unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    secs
}

/// A fresh cache with the image locks of the project's own.
fn fresh_cache(dir: &Path) -> std::path::PathBuf {
    let cache = dir.to_owned();
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ngcc-repro/images");
    std::fs::create_dir_all(cache.join("images")).unwrap();
    for e in std::fs::read_dir(images).expect("the Debian 13 image: run `cargo xtask image build debian-13`") {
        let e = e.unwrap();
        std::fs::copy(e.path(), cache.join("images").join(e.file_name())).unwrap();
    }
    cache
}

fn main() {
    let c = Case::new();
    let one = campaign(&c, "1", &fresh_cache(&c.tmp.path().join("cache-1")));
    let two = campaign(&c, "2", &fresh_cache(&c.tmp.path().join("cache-2")));
    println!("campaign over the field fixture (8 instances, builds from nothing, --no-bench):");
    println!("  --jobs 1: {one:.1} s");
    println!("  --jobs 2: {two:.1} s");
    println!("  ratio (jobs 2 / jobs 1): {:.2}", two / one);
}
