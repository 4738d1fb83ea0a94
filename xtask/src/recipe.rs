//! Build plans: the exact compiler command lines for one instance, derived from
//! its manifest. The submission's own Makefiles and build scripts are never used.

use anyhow::{bail, Context, Result};
use camino::Utf8Path;
use serde::Serialize;

use crate::engine::Sandbox;
use crate::project;
use crate::sources::Source;
use crate::submission::{CmakeSpec, Instance, Submission};

/// Mount points inside the sandbox.
pub const SRC: &str = "/src";
pub const DRIVERS: &str = "/drivers";
pub const WORK: &str = "/work";

pub const LIBRARY: &str = "libinstance.so";
pub const KAT_PROGRAM: &str = "kat";
pub const BENCH_DRIVER: &str = "kem_bench.c";
pub const BENCH_PROGRAM: &str = "kem_bench";

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub what: String,
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub flag_set: String,
    pub flags: Vec<String>,
    pub steps: Vec<Step>,
    /// Sandbox folder the KAT program runs in, and its command line.
    pub workdir: String,
    pub run: Vec<String>,
}

/// Plan for building `inst` into `<work>/<build_dir>`.
pub fn plan(sub: &Submission, inst: &Instance, src: &Source, sb: &Sandbox, build_dir: &str) -> Result<Plan> {
    let mut flags = sub.flags();
    flags.extend(inst.extra_flags.iter().cloned());
    let work = sb.path(WORK, build_dir);
    if let Some(cmake) = &sub.build.cmake {
        return Ok(cmake_plan(sub, inst, cmake, flags, &sb.path(SRC, ""), &work));
    }
    let src_path = |rel: &str| sb.path(SRC, rel).to_string();

    let never: Vec<String> = sub.build.never_compile.iter().map(|p| inst.expand(p)).collect();
    let mut lib_sources = Vec::new();
    for pattern in &sub.build.sources {
        for rel in resolve(&src.root, &inst.expand(pattern))? {
            if never.iter().any(|n| *n == rel || rel.rsplit('/').next() == Some(n.as_str())) {
                continue;
            }
            lib_sources.push(src_path(&rel));
        }
    }
    if lib_sources.is_empty() {
        bail!("instance {}: the source patterns match no file", inst.label);
    }
    let includes: Vec<String> = sub.build.include.iter().map(|i| format!("-I{}", src_path(&inst.expand(i)))).collect();
    let defines: Vec<String> = sub.build.defines.iter().map(|d| format!("-D{}", inst.expand(d))).collect();

    let mut lib = vec!["gcc".to_owned()];
    lib.extend(flags.iter().cloned());
    lib.extend(["-fPIC".into(), "-shared".into()]);
    lib.extend(includes.iter().cloned());
    lib.extend(defines.iter().cloned());
    lib.extend(lib_sources);
    lib.extend(["-o".into(), work.join(LIBRARY).to_string()]);

    let mut prog = vec!["gcc".to_owned()];
    prog.extend(flags.iter().cloned());
    prog.extend(sub.kat.include.iter().map(|i| format!("-I{}", program_path(sb, &inst.expand(i)))));
    prog.extend(includes);
    prog.extend(sub.kat.defines.iter().map(|d| format!("-D{}", inst.expand(d))));
    prog.extend(defines);
    if let Some(h) = &sub.kat.api_header {
        prog.extend(force_include(inst, src, sb, h)?);
    }
    for p in &sub.kat.program {
        let p = inst.expand(p);
        if !p.starts_with("driver:") && !src.root.join(&p).is_file() {
            bail!("instance {}: KAT program source {p} not found in {}", inst.label, src.root);
        }
        prog.push(program_path(sb, &p));
    }
    prog.extend(link_to_library(&work, KAT_PROGRAM));

    Ok(Plan {
        flag_set: sub.flag_set(inst),
        flags,
        steps: vec![Step { what: "library".into(), argv: lib }, Step { what: "kat program".into(), argv: prog }],
        workdir: work.to_string(),
        run: vec![work.join(KAT_PROGRAM).to_string()],
    })
}

/// `-include <header>` for a header of the source tree, which must exist.
fn force_include(inst: &Instance, src: &Source, sb: &Sandbox, header: &str) -> Result<[String; 2]> {
    let h = inst.expand(header);
    if !src.root.join(&h).is_file() {
        bail!("instance {}: API header {h} not found in {}", inst.label, src.root);
    }
    Ok(["-include".into(), sb.path(SRC, &h).to_string()])
}

/// Output `<work>/<program>`, linked to the instance library next to it.
fn link_to_library(work: &Utf8Path, program: &str) -> [String; 5] {
    ["-o".into(), work.join(program).to_string(), format!("-L{work}"), "-linstance".into(), "-Wl,-rpath,$ORIGIN".into()]
}

/// The timing driver, compiled with the build's flags and linked to the instance
/// library of a finished build; the manifest's `[bench]` picks the API adapter.
pub fn bench_step(sub: &Submission, inst: &Instance, src: &Source, sb: &Sandbox, plan: &Plan) -> Result<Step> {
    let spec = sub.bench.as_ref().with_context(|| format!("{} has no [bench] section", sub.id))?;
    if sub.build.cmake.is_some() {
        bail!("{}: timing needs the instance library of the cc recipe; the cmake recipe has none", sub.id);
    }
    let work = Utf8Path::new(&plan.workdir);
    let mut argv = vec!["gcc".to_owned()];
    argv.extend(plan.flags.iter().cloned());
    // Force-included headers come before the driver's own #define.
    argv.push("-D_GNU_SOURCE".into());
    argv.extend(sub.build.include.iter().map(|i| format!("-I{}", sb.path(SRC, &inst.expand(i)))));
    argv.extend(sub.build.defines.iter().chain(&spec.defines).map(|d| format!("-D{}", inst.expand(d))));
    argv.extend(force_include(inst, src, sb, &spec.header)?);
    argv.extend(["-include".into(), sb.path(DRIVERS, &format!("bench_{}.h", spec.api.name())).to_string()]);
    argv.push(sb.path(DRIVERS, BENCH_DRIVER).to_string());
    argv.extend(link_to_library(work, BENCH_PROGRAM));
    Ok(Step { what: "timing driver".into(), argv })
}

/// Configure and build one target of the submission's CMake project.
fn cmake_plan(
    sub: &Submission,
    inst: &Instance,
    cmake: &CmakeSpec,
    flags: Vec<String>,
    src: &Utf8Path,
    work: &Utf8Path,
) -> Plan {
    let mut configure = vec![
        "cmake".to_owned(),
        "-S".into(),
        src.to_string(),
        "-B".into(),
        work.to_string(),
        "-G".into(),
        "Unix Makefiles".into(),
    ];
    configure.push(format!("-DCMAKE_C_FLAGS={}", flags.join(" ")));
    configure.extend(cmake.configure.iter().map(|c| inst.expand(c)));
    let build = vec![
        "cmake".to_owned(),
        "--build".into(),
        work.to_string(),
        "--target".into(),
        cmake.target.clone(),
        "--parallel".into(),
        "2".into(),
    ];
    let mut run: Vec<String> = sub.kat.run.iter().map(|a| inst.expand(a)).collect();
    run[0] = work.join(&run[0]).to_string();
    Plan {
        flag_set: sub.flag_set(inst),
        flags,
        steps: vec![
            Step { what: "cmake configure".into(), argv: configure },
            Step { what: "cmake build".into(), argv: build },
        ],
        workdir: work.to_string(),
        run,
    }
}

/// `driver:<file>` is the harness's own driver; anything else is in the source tree.
fn program_path(sb: &Sandbox, p: &str) -> String {
    match p.strip_prefix("driver:") {
        Some(d) => sb.path(DRIVERS, d).to_string(),
        None => sb.path(SRC, p).to_string(),
    }
}

/// Expand one source pattern against the host tree (sorted, relative paths).
fn resolve(root: &Utf8Path, pattern: &str) -> Result<Vec<String>> {
    if let Some(dir) = pattern.strip_suffix("/*.c") {
        let mut files: Vec<String> = root
            .join(dir)
            .read_dir_utf8()
            .with_context(|| format!("source folder {dir} not found in {root}"))?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().ends_with(".c") && e.path().is_file())
            .map(|e| format!("{dir}/{}", e.file_name()))
            .collect();
        files.sort();
        return Ok(files);
    }
    if !root.join(pattern).is_file() {
        bail!("source file {pattern} not found in {root}");
    }
    Ok(vec![pattern.to_owned()])
}

/// Digests of the harness drivers a plan uses, so that a changed driver rebuilds.
pub fn driver_digests(sub: &Submission) -> Result<Vec<(String, String)>> {
    sub.kat
        .program
        .iter()
        .filter_map(|p| p.strip_prefix("driver:"))
        .map(|d| Ok((d.to_owned(), project::sha256_file(&project::root().join("drivers").join(d))?)))
        .collect()
}
