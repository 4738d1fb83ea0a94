//! `cargo xtask image build|check`: toolchain images from mmdebstrap root
//! filesystems, imported into the engine without any registry.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use crate::container::engine::Target;
use crate::container::engine::{which, Backend, Engine};
use crate::container::sandbox::{Limits, Sandbox};
use crate::container::toolchain::{Distro, Toolchain};
use crate::evidence::domain::Arch;
use crate::evidence::schema::ImageLock;
use crate::lock::KeyLock;
use crate::project;

/// `image check`: the image's compilers against their pins.
#[derive(Debug, Clone)]
pub struct ImageCheck {
    pub toolchain: String,
    pub target: Target,
}

/// `image build`: make the image of a toolchain spec (reused when unchanged).
#[derive(Debug, Clone)]
pub struct ImageBuild {
    pub toolchain: String,
    pub target: Target,
    pub mirror: Option<String>,
    pub force: bool,
    pub analysis: bool,
}

impl ImageBuild {
    pub fn run(self, sh: &Shell) -> Result<()> {
        let engine = container_engine(sh, &self.target)?;
        let tc = Toolchain::load(&self.toolchain)?;
        let lock = ensure(sh, engine, &tc, self.target.arch(), self.mirror.as_deref(), self.force)?;
        print_lock(engine, &lock);
        if self.analysis {
            let analysis = ensure_analysis(sh, engine, &tc, &lock)?;
            crate::say!("analysis {} (valgrind {})", analysis.tag, analysis_valgrind(&analysis));
        }
        Ok(())
    }
}

impl ImageCheck {
    pub fn run(self, sh: &Shell) -> Result<()> {
        let engine = container_engine(sh, &self.target)?;
        let tc = Toolchain::load(&self.toolchain)?;
        let tag = tc.tag(self.target.arch());
        if engine.image_id(sh, &tag)?.is_none() {
            bail!("no image {tag}; run `cargo xtask image build {}` first", tc.name);
        }
        let lock = check(sh, engine, &tc, self.target.arch(), None)?;
        print_lock(engine, &lock);
        crate::say!("OK: {} matches its pins", tc.name);
        Ok(())
    }
}

fn container_engine(sh: &Shell, target: &Target) -> Result<Engine> {
    Engine::select(sh, target.engine)
}

fn print_lock(engine: Engine, lock: &ImageLock) {
    crate::say!("image    {}", lock.tag);
    crate::say!("id       {}", lock.image_id);
    crate::say!("arch     {} (uname -m: {})", lock.arch.debian(), lock.uname_m);
    crate::say!("gcc      {}", lock.gcc_version);
    crate::say!("cmake    {}", lock.cmake_version);
    if let Some(r) = &lock.rootfs_sha256 {
        crate::say!("rootfs   sha256 {r}");
    }
    crate::say!("packages {} recorded in {}", lock.packages.len(), ImageLock::path(engine, &lock.tag));
}

fn analysis_valgrind(lock: &ImageLock) -> &str {
    lock.analysis.as_ref().map_or("?", |a| a.valgrind_version.as_str())
}

/// The lock held while an image of `what` (a toolchain and architecture, for every
/// engine: they share the root filesystem's path) is checked or made, so that two runs
/// (a test and `image build` in the background, two test threads) never build it at once:
/// the second waits and then reuses the first one's image.
fn build_lock(what: &str) -> Result<KeyLock> {
    let dir = project::cache_dir().join("images");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {dir}"))?;
    KeyLock::exclusive(&dir.join(format!("{what}.build.lock")))
}

/// The checked image of a toolchain, built when missing. An unchanged spec reuses
/// the existing image; its lock is re-derived when the cached one is stale.
pub fn ensure(
    sh: &Shell,
    engine: Engine,
    tc: &Toolchain,
    arch: Arch,
    mirror: Option<&str>,
    force: bool,
) -> Result<ImageLock> {
    tc.supports(arch)?;
    let tag = tc.tag(arch);
    let _building = build_lock(&format!("{}-{}", tc.name, arch.debian()))?;
    if !force {
        if let Some(id) = engine.image_id(sh, &tag)? {
            if let Some(lock) = ImageLock::load(engine, &tag).filter(|l| l.image_id == id) {
                crate::note!("image {tag} reused ({})", &id[..12.min(id.len())]);
                return Ok(lock);
            }
            crate::note!("image {tag} exists; checking it");
            return check(sh, engine, tc, arch, None);
        }
    }
    let rootfs = build_rootfs(sh, tc, arch, mirror)?;
    let rootfs_sha = project::sha256_file(&rootfs)?;
    let t = Instant::now();
    engine
        .call(
            sh,
            &[
                "import".into(),
                engine.import_arch_arg(arch),
                "--change".into(),
                "CMD [\"/bin/bash\"]".into(),
                rootfs.to_string(),
                tag.clone(),
            ],
        )
        .with_context(|| format!("cannot import {rootfs} as {tag}"))?;
    crate::note!("imported {tag} in {:.1} s", t.elapsed().as_secs_f64());
    std::fs::remove_file(&rootfs).ok();
    check(sh, engine, tc, arch, Some(rootfs_sha))
}

fn build_rootfs(sh: &Shell, tc: &Toolchain, arch: Arch, mirror: Option<&str>) -> Result<camino::Utf8PathBuf> {
    if !which("mmdebstrap") {
        bail!(
            "mmdebstrap is not installed (Debian package `mmdebstrap`); it builds the root filesystem \
             (`cargo xtask doctor` lists every prerequisite)"
        );
    }
    if tc.distro == Distro::Ubuntu && mirror.is_none() {
        bail!(
            "toolchain {} needs Ubuntu's package archive for suite `{}`, which mmdebstrap cannot \
             reach by default from a Debian host. Run `cargo xtask image build {} --mirror <Ubuntu \
             archive URL>` on a machine that reaches it (with the Debian package `ubuntu-keyring` \
             installed), or build containers/{}.Containerfile with a registry.",
            tc.name,
            tc.suite,
            tc.name,
            tc.name
        );
    }
    if arch != Arch::host() {
        if !which("arch-test") {
            bail!(
                "mmdebstrap needs `arch-test` to build a foreign ({}) root filesystem: install the \
                 package arch-test (see `cargo xtask doctor`)",
                arch.debian()
            );
        }
        crate::container::emulation::ensure_binfmt(arch)?;
    }
    let dir = project::cache_dir().join("images");
    std::fs::create_dir_all(&dir)?;
    let tar = dir.join(format!("{}-{}.tar", tc.name, arch.debian()));
    let include = tc.include_list().join(",");
    let suite = &tc.suite;
    let arch_flag = format!("--architectures={}", arch.debian());
    let include_flag = format!("--include={include}");
    let mirror: Vec<&str> = mirror.into_iter().collect();
    let key = format!("rootfs-{}-{}", tc.name, arch.debian());
    let last = crate::ui::last_duration(&key);
    let took_before = last.map_or("a few minutes".to_owned(), |d| format!("{} last time", crate::ui::clock(d)));
    crate::note!("building the {} root filesystem for {} with mmdebstrap ({took_before})...", tc.name, arch.debian());
    let live = crate::ui::progress(format!("mmdebstrap {} {}", tc.name, arch.debian()), last);
    let t = Instant::now();
    // SOURCE_DATE_EPOCH makes the tarball reproducible for the same package set.
    let out = cmd!(sh, "mmdebstrap --quiet --variant=apt {arch_flag} {include_flag} {suite} {tar} {mirror...}")
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .ignore_status()
        .output()
        .context("cannot run mmdebstrap")?;
    if !out.status.success() {
        bail!(
            "mmdebstrap failed for toolchain {} ({}, {}):\n{}",
            tc.name,
            arch.debian(),
            out.status,
            explain_mmdebstrap(&String::from_utf8_lossy(&out.stderr))
        );
    }
    drop(live);
    crate::ui::remember_duration(&key, t.elapsed());
    crate::note!("root filesystem built in {:.0} s", t.elapsed().as_secs_f64());
    Ok(tar)
}

/// mmdebstrap's own error lines (or the end of its output), and a hint only where the
/// error is about a package version.
fn explain_mmdebstrap(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().collect();
    let errors: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("E:")).collect();
    let mut text =
        if errors.is_empty() { lines[lines.len().saturating_sub(20)..].join("\n") } else { errors.join("\n") };
    let version_problem = ["Version '", "has no installation candidate", "Unable to locate package"];
    if version_problem.iter().any(|p| stderr.contains(p)) {
        text.push_str(
            "\nA pinned package version is not in the archive: it may have left it; pass --mirror with an \
             archive (a snapshot) that still has it.",
        );
    }
    text
}

/// Run the compilers and dpkg inside the image; fail on any difference from the pins.
pub fn check(
    sh: &Shell,
    engine: Engine,
    tc: &Toolchain,
    arch: Arch,
    rootfs_sha256: Option<String>,
) -> Result<ImageLock> {
    let tag = tc.tag(arch);
    let image_id = engine.image_id(sh, &tag)?.with_context(|| format!("no image {tag}"))?;
    let sandbox = Sandbox {
        backend: Backend::Container(engine),
        image: Some(tag.clone()),
        limits: Limits::default(),
        jit: !crate::container::emulation::native(arch),
        cpus: None,
    };
    let gcc_version = sandbox.version_line(sh, "gcc")?;
    let cmake_version = sandbox.version_line(sh, "cmake")?;
    let query = sandbox.output(sh, &["dpkg-query", "-W", "-f", "${Package}\t${Version}\n"])?;
    let uname = sandbox.output(sh, &["uname", "-m"])?;
    let packages = package_list(&query);
    let uname_m = String::from_utf8_lossy(&uname).trim().to_owned();
    let mut problems = tc.pin_violations(&packages);
    if gcc_version != tc.expect.gcc {
        problems.push(format!("gcc --version says {gcc_version:?}, expected {:?}", tc.expect.gcc));
    }
    if cmake_version != tc.expect.cmake {
        problems.push(format!("cmake --version says {cmake_version:?}, expected {:?}", tc.expect.cmake));
    }
    if uname_m != arch.uname() {
        problems.push(format!("uname -m says {uname_m:?}, expected {:?}", arch.uname()));
    }
    if !problems.is_empty() {
        bail!("image {tag} does not match toolchain {}:\n  {}", tc.name, problems.join("\n  "));
    }
    let old = ImageLock::load(engine, &tag);
    let rootfs_sha256 = rootfs_sha256.or_else(|| old.filter(|o| o.image_id == image_id).and_then(|o| o.rootfs_sha256));
    let lock = ImageLock {
        schema: crate::evidence::schema::version::<ImageLock>(),
        toolchain: tc.name.clone(),
        spec_sha256: tc.spec_sha256.clone(),
        arch,
        tag: tag.clone(),
        image_id,
        rootfs_sha256,
        gcc_version,
        cmake_version,
        uname_m,
        packages,
        checked_at: project::now_utc(),
        analysis: None,
    };
    crate::evidence::schema::write(&ImageLock::path(engine, &tag), &lock)?;
    Ok(lock)
}

/// The analysis image of a toolchain (`ct`): its checked toolchain image plus the
/// analysis pins, installed with apt in a container of it and committed. Reused while
/// its lock names the same base image and every pin holds.
pub fn ensure_analysis(sh: &Shell, engine: Engine, tc: &Toolchain, base: &ImageLock) -> Result<ImageLock> {
    if tc.analysis.is_empty() {
        bail!("toolchain {} has no analysis image: no toolchains/analysis/{}.toml", tc.name, tc.name);
    }
    let tag = tc.analysis_tag(base.arch, &base.image_id);
    let _building = build_lock(&format!("{}-analysis-{}", tc.name, base.arch.debian()))?;
    if let Some(id) = engine.image_id(sh, &tag)? {
        if let Some(lock) = ImageLock::load(engine, &tag).filter(|l| l.image_id == id) {
            crate::note!("analysis image {tag} reused ({})", &id[..12.min(id.len())]);
            return Ok(lock);
        }
        return check_analysis(sh, engine, tc, base, &tag);
    }
    let pins: Vec<String> = tc.analysis.iter().map(|(p, v)| format!("{p}={v}")).collect();
    crate::note!("making the analysis image {tag}: {} on {}", pins.join(" "), base.tag);
    let live = crate::ui::progress(format!("apt-get install {}", pins.join(" ")), None);
    let t = Instant::now();
    let name = format!("ngcc-analysis-{}", std::process::id());
    let script = format!(
        "apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends {} >&2 \
         && rm -rf /var/lib/apt/lists/*",
        pins.join(" ")
    );
    // The sandbox's limits (this host family refuses the engine's defaults).
    let limits = ["--ulimit=nofile=1024:1024", "--ulimit=nproc=1024:1024"];
    let mut run: Vec<String> = ["run", "--name", &name, "--network", "host"].map(String::from).into();
    run.extend(limits.map(String::from));
    run.extend([base.tag.clone(), "sh".into(), "-c".into(), script]);
    let made = engine.call(sh, &run).and_then(|_| engine.call(sh, &["commit".into(), name.clone(), tag.clone()]));
    let _ = engine.call(sh, &engine.remove_args(&name));
    made.with_context(|| format!("cannot make the analysis image of {} ({})", tc.name, pins.join(" ")))?;
    drop(live);
    crate::note!("analysis image made in {:.0} s", t.elapsed().as_secs_f64());
    check_analysis(sh, engine, tc, base, &tag)
}

/// Check an analysis image against its base image's lock and the analysis pins.
fn check_analysis(sh: &Shell, engine: Engine, tc: &Toolchain, base: &ImageLock, tag: &str) -> Result<ImageLock> {
    let image_id = engine.image_id(sh, tag)?.with_context(|| format!("no image {tag}"))?;
    let sandbox = Sandbox {
        backend: Backend::Container(engine),
        image: Some(tag.to_owned()),
        limits: Limits::default(),
        jit: true, // `valgrind --version`: valgrind maps executable memory even for that
        cpus: None,
    };
    let gcc_version = sandbox.version_line(sh, "gcc")?;
    let valgrind_version = sandbox.version_line(sh, "valgrind")?;
    let query = sandbox.output(sh, &["dpkg-query", "-W", "-f", "${Package}\t${Version}\n"])?;
    let packages = package_list(&query);
    let mut problems = tc.analysis_violations(&packages);
    problems.extend(tc.pin_violations(&packages));
    if gcc_version != base.gcc_version {
        problems.push(format!("gcc --version says {gcc_version:?}, its toolchain image {:?}", base.gcc_version));
    }
    if !problems.is_empty() {
        bail!("analysis image {tag} does not match toolchain {}:\n  {}", tc.name, problems.join("\n  "));
    }
    let pinned = tc.analysis.keys().filter_map(|p| Some((p.clone(), packages.get(p)?.clone()))).collect();
    let lock = ImageLock {
        tag: tag.to_owned(),
        image_id,
        rootfs_sha256: None,
        packages,
        checked_at: project::now_utc(),
        analysis: Some(crate::evidence::schema::AnalysisLayer {
            base_tag: base.tag.clone(),
            base_image_id: base.image_id.clone(),
            pinned,
            valgrind_version,
        }),
        ..base.clone()
    };
    crate::evidence::schema::write(&ImageLock::path(engine, tag), &lock)?;
    Ok(lock)
}

/// `dpkg-query -W` lines as package → version (the architecture qualifier dropped).
fn package_list(query: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(query)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(p, v)| (p.split(':').next().unwrap_or(p).to_owned(), v.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mmdebstrap_errors_are_quoted_and_the_version_hint_only_fits_version_errors() {
        let arch =
            "I: chroot architecture arm64 is not supported\nE: install arch-test for foreign architecture support\n";
        let text = explain_mmdebstrap(arch);
        assert_eq!(text, "E: install arch-test for foreign architecture support");
        let pin = "E: Version '14.2.0-19' for 'gcc-14' was not found\nE: mmdebstrap failed\n";
        let text = explain_mmdebstrap(pin);
        assert!(text.starts_with("E: Version '14.2.0-19'") && text.contains("--mirror"), "{text}");
    }
}
