//! Build plans: the exact compiler command lines for one instance, derived from
//! its manifest. The submission's own Makefiles and build scripts are never used.

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};

use crate::compile::sources::Source;
use crate::compile::submission::{glob, ArchSpec, CmakeSpec, Instance, Lengths, Submission, KAT_RECORDS};
use crate::container::engine::Backend;
use crate::evidence::domain::Arch;
use crate::family::{Corroboration, CtCheck, Driver, Family};
use crate::project;

/// Mount points inside the sandbox. Build steps run in BUILD (their own fresh folder);
/// programs run in /tmp with BUILD read-only.
pub const SRC: &str = "/src";
pub const DRIVERS: &str = "/drivers";
pub const BUILD: &str = "/build";

pub const LIBRARY: &str = "libinstance.so";
pub const KAT_PROGRAM: &str = "kat";

pub use crate::evidence::domain::Step;

pub use crate::evidence::domain::Plan;

/// The one program of a build whose drivers are its modes (`drivers/candidate.c`).
pub const PROGRAM: &str = "candidate";
/// The dispatcher of [`PROGRAM`], which reads the mode from stdin's first line.
pub const DISPATCHER: &str = "candidate.c";

impl Plan {
    /// The program that runs `driver`'s code, and the words of its stdin's first line
    /// when it is one mode of the build's one program.
    pub fn program_of<'a>(&'a self, driver: &'a str) -> (&'a str, Option<&'a str>) {
        match self.modes.get(driver) {
            Some(mode) => (PROGRAM, Some(mode.as_str())),
            None => (driver, None),
        }
    }
}

/// Where a build step sees the source tree and the harness drivers.
#[derive(Debug, Clone)]
pub struct Places {
    pub src: Utf8PathBuf,
    pub drivers: Utf8PathBuf,
    /// The architecture built for: `[build.arch.*]` additions follow it.
    pub arch: Arch,
}

/// Folder of the build's inputs that holds the official ICCS API files (a name no
/// manifest path can take: manifests name no hidden `.ngcc-` folder of their own).
pub const ICCS_DIR: &str = ".ngcc-iccs";

impl Places {
    /// Where every container build sees them.
    pub fn container(arch: Arch) -> Places {
        Places { src: SRC.into(), drivers: DRIVERS.into(), arch }
    }

    pub fn new(backend: Backend, src_root: &Utf8Path, arch: Arch) -> Places {
        match backend {
            Backend::Container(_) => Places::container(arch),
            Backend::Host => Places { src: src_root.to_owned(), drivers: project::drivers_dir(), arch },
        }
    }

    fn src(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.src.to_string()
        } else {
            self.src.join(rel).to_string()
        }
    }

    fn driver(&self, file: &str) -> String {
        self.drivers.join(file).to_string()
    }
}

/// Check that `inst` can be planned from this tree (sources, headers, `never_compile`),
/// before any engine or image work.
pub fn check(sub: &Submission, inst: &Instance, src: &Source, arch: Arch) -> Result<()> {
    plan(sub, inst, src, &Places::container(arch)).map(drop).map_err(crate::ui::Usage::of)
}

/// What `[build]`, the instance and its architecture's table add up to.
struct Parts<'a> {
    sources: Vec<&'a String>,
    include: Vec<&'a String>,
    defines: Vec<&'a String>,
    libs: Vec<&'a String>,
}

impl<'a> Parts<'a> {
    fn of(sub: &'a Submission, inst: &'a Instance, arch: Arch) -> Parts<'a> {
        let (b, a) = (&sub.build, sub.build.arch.get(&arch));
        let extra = |f: fn(&'a ArchSpec) -> &'a Vec<String>| a.into_iter().flat_map(f);
        Parts {
            sources: b.sources.iter().chain(&inst.sources).chain(extra(|a| &a.sources)).collect(),
            include: b.include.iter().chain(extra(|a| &a.include)).collect(),
            defines: b.defines.iter().chain(&inst.defines).chain(extra(|a| &a.defines)).collect(),
            libs: b.libs.iter().chain(extra(|a| &a.libs)).collect(),
        }
    }
}

/// Plan for building `inst` with every driver a program of its own: pure, from the
/// manifest, the host tree (to expand patterns) and where the build will see things.
fn separate_plan(sub: &Submission, inst: &Instance, src: &Source, places: &Places) -> Result<Plan> {
    let mut flags = sub.flags();
    flags.extend(inst.extra_flags.iter().cloned());
    if let Some(cmake) = &sub.build.cmake {
        return Ok(cmake_plan(sub, inst, cmake, flags, places));
    }
    let src_path = |rel: &str| places.src(rel);
    let parts = Parts::of(sub, inst, places.arch);

    let never = never_compile(sub, inst, src)?;
    let mut lib_sources = Vec::new();
    for pattern in &parts.sources {
        // Harness code a manifest builds in (the hash baselines' CryptHash adapter).
        if let Some(d) = inst.expand(pattern).strip_prefix("driver:") {
            lib_sources.push(places.driver(d));
            continue;
        }
        for rel in resolve(&src.root, &inst.expand(pattern))? {
            let path = src_path(&rel);
            if !never.contains(&rel) && !lib_sources.contains(&path) {
                lib_sources.push(path);
            }
        }
    }
    if lib_sources.is_empty() {
        bail!("instance {}: the source patterns match no file", inst.label);
    }
    lib_sources.extend(iccs_sources(sub, inst, src)?.iter().map(|rel| src_path(rel)));
    let mut includes: Vec<String> =
        parts.include.iter().map(|i| format!("-I{}", program_path(places, &inst.expand(i)))).collect();
    if !sub.iccs_files(inst).is_empty() {
        // Last, as the harness's `-Iapi`: the tree's own headers come first.
        includes.push(format!("-I{}", src_path(ICCS_DIR)));
    }
    let defines: Vec<String> = parts.defines.iter().map(|d| format!("-D{}", inst.expand(d))).collect();

    let mut lib = vec!["gcc".to_owned()];
    lib.extend(flags.iter().cloned());
    lib.extend(["-fPIC".into(), "-shared".into()]);
    lib.extend(includes.iter().cloned());
    lib.extend(defines.iter().cloned());
    lib.extend(lib_sources);
    lib.extend(parts.libs.iter().map(|l| format!("-l{l}")));
    lib.extend(inst.link_flags.iter().cloned());
    lib.extend(["-o".into(), LIBRARY.into()]);

    let mut prog = vec!["gcc".to_owned()];
    prog.extend(flags.iter().cloned());
    prog.extend(sub.kat.include.iter().map(|i| format!("-I{}", program_path(places, &inst.expand(i)))));
    prog.extend(includes);
    prog.extend(sub.kat.defines.iter().map(|d| format!("-D{}", inst.expand(d))));
    prog.extend(defines);
    if sub.kat.lengths == Lengths::Reset {
        prog.push("-DNGCC_KAT_RESET_LENGTHS=1".into());
    }
    if inst.kat_records != KAT_RECORDS {
        prog.push(format!("-DNGCC_KAT_RECORDS={}", inst.kat_records));
    }
    prog.extend(digest_width(inst));
    prog.extend(drng_owner(sub));
    if let Some(h) = &sub.kat.api_header {
        prog.extend(force_include(inst, src, places, h)?);
    }
    for p in &sub.kat.program {
        let p = inst.expand(p);
        if !p.starts_with("driver:") && !src.root.join(&p).is_file() {
            bail!("instance {}: KAT program source {p} not found in {}", inst.label, src.root);
        }
        prog.push(program_path(places, &p));
    }
    prog.extend(link_to_library(KAT_PROGRAM));

    let mut steps = vec![
        Step { what: "library".into(), argv: lib, output: Some(LIBRARY.into()), optional: false },
        Step { what: "kat program".into(), argv: prog, output: Some(KAT_PROGRAM.into()), optional: false },
    ];
    if sub.bench.is_some() {
        // The timing driver is optional (KATs are still checked without it); the
        // corroborating driver is not: a PASS needs it whenever the API can be reached.
        let family = sub.family()?;
        steps.push(adapter_step(sub, inst, src, places, &flags, Adapter::bench(family))?);
        if let Some(check) = &family.corroboration {
            steps.push(adapter_step(sub, inst, src, places, &flags, Adapter::check(check))?);
        }
        if let Some(ct) = &family.ct {
            steps.push(adapter_step(sub, inst, src, places, &flags, Adapter::ct_timing(ct))?);
        }
    }
    let run = vec![KAT_PROGRAM.into()];
    Ok(Plan { flag_set: sub.flag_set(inst), flags, steps, run, modes: Default::default() })
}

/// Plan for building `inst` as it runs for KATs, checks and timing: one program when
/// the drivers are all the harness's own (see [`one_program`]).
pub fn plan(sub: &Submission, inst: &Instance, src: &Source, places: &Places) -> Result<Plan> {
    let plan = separate_plan(sub, inst, src, places)?;
    if !one_program(sub) {
        return Ok(plan);
    }
    into_one_program(plan, sub.family()?, places)
}

/// Whether `sub`'s drivers become one program: the cc recipe with the harness's own KAT
/// driver and, if it is timed, the ICCS adapter. A pinned crate's KAT program and its
/// NIST adapter each bring their own `randombytes`, which one program cannot hold twice.
pub fn one_program(sub: &Submission) -> bool {
    sub.build.cmake.is_none()
        && !sub.kat.program.is_empty()
        && sub.kat.program.iter().all(|p| p.starts_with("driver:"))
        && sub.bench.as_ref().is_none_or(|b| b.api.name() == "iccs")
}

/// The drivers of `plan` compiled into mode objects of one program: each driver's
/// `main` is renamed `ngcc_mode_<mode>`; the drivers define no other global but the DRNG
/// state the library reads (`drng_algorithm`, a tentative definition in each, merged by
/// `-fcommon`) and the output channel (`channel.h`, the dispatcher's under
/// `NGCC_ONE_PROGRAM`). The dispatcher links whichever modes built; libc comes before the
/// library, so the library cannot stand in for a libc function the drivers call.
fn into_one_program(mut plan: Plan, family: &Family, places: &Places) -> Result<Plan> {
    let mut modes = vec![(KAT_PROGRAM, "kat")];
    modes.push((family.bench.program, "bench"));
    modes.extend(family.corroboration.map(|c| (c.driver.program, "check")));
    modes.extend(family.ct.map(|c| (c.driver.program, "ct")));
    let mut steps = Vec::new();
    let mut objects = Vec::new();
    for mut step in std::mem::take(&mut plan.steps) {
        let Some(&(driver, mode)) = modes.iter().find(|(d, _)| step.output.as_deref() == Some(*d)) else {
            steps.push(step);
            continue;
        };
        let object = format!("mode-{mode}.o");
        let tail = link_to_library(driver);
        if !step.argv.ends_with(&tail) {
            bail!("{}: the step does not end with its link to the library", step.what);
        }
        step.argv.truncate(step.argv.len() - tail.len());
        let main = format!("-Dmain=ngcc_mode_{mode}");
        step.argv.extend([
            "-DNGCC_ONE_PROGRAM=1".into(),
            "-fcommon".into(),
            main,
            "-r".into(),
            "-nostdlib".into(),
            "-o".into(),
            object.clone(),
        ]);
        step.output = Some(object.clone());
        plan.modes.insert(driver.to_owned(), mode.to_owned());
        steps.push(step);
        objects.push(object);
    }
    let mut link = vec!["gcc".to_owned()];
    link.extend(plan.flags.iter().cloned());
    link.push(places.driver(DISPATCHER));
    link.extend(objects);
    link.extend(["-o".into(), PROGRAM.into(), "-L.".into(), "-Wl,--no-as-needed".into(), "-lc".into()]);
    link.extend(["-linstance".into(), "-Wl,-rpath,$ORIGIN".into()]);
    steps.push(Step { what: "one program".into(), argv: link, output: Some(PROGRAM.into()), optional: false });
    plan.steps = steps;
    Ok(plan)
}

/// The profile's wrapper source, linked into the profiling variant of the library.
pub const PROFILE_DRIVER: &str = "profile.c";

/// The profiling variant of `inst`: the reference plan with the manifest's profile
/// symbols wrapped at link time in the library (relocations kept for the call-site
/// check, `profile::unseen_call_sites`) and a timing driver that prints the counts.
pub fn profile_plan(sub: &Submission, inst: &Instance, src: &Source, places: &Places) -> Result<Plan> {
    let spec = sub.profile.as_ref().with_context(|| format!("{} has no [profile] section", sub.id))?;
    if sub.build.cmake.is_some() || sub.bench.is_none() {
        bail!("{}: profiles need the cc recipe and a [bench] section", sub.id);
    }
    let mut plan = separate_plan(sub, inst, src, places)?;
    let family = sub.family()?;
    let bench = family.bench.program;
    let others = [family.corroboration.map(|c| c.driver.program), family.ct.map(|c| c.driver.program)];
    plan.steps.retain(|s| !others.iter().flatten().any(|p| s.output.as_deref() == Some(*p)));
    let symbols: Vec<&String> = spec.groups.iter().flat_map(|g| &g.symbols).collect();
    let list: Vec<String> = symbols.iter().enumerate().map(|(i, s)| format!("X({i},{s})")).collect();
    for step in &mut plan.steps {
        match step.output.as_deref() {
            Some(LIBRARY) => {
                let at = step.argv.len() - 2; // before `-o libinstance.so`
                let mut extra =
                    vec![places.driver(PROFILE_DRIVER), format!("-DNGCC_PROFILE_SYMBOLS={}", list.join(" "))];
                extra.push("-Wl,--emit-relocs".into());
                extra.extend(symbols.iter().map(|s| format!("-Wl,--wrap={s}")));
                step.argv.splice(at..at, extra);
            }
            Some(p) if p == bench => {
                step.argv.insert(1, "-DNGCC_PROFILE".into());
                step.optional = false;
            }
            _ => {}
        }
    }
    plan.flag_set = format!("{}+profile", plan.flag_set);
    Ok(plan)
}

/// The constant-time variant of `inst` (`ct`): the reference plan's library with debug
/// information and the DRNG wrapper (`ct_random.c`), and the family's ct driver; no
/// other program. Otherwise the guide build: the same flags, sources and defines.
pub fn ct_plan(sub: &Submission, inst: &Instance, src: &Source, places: &Places) -> Result<Plan> {
    if let Some(why) = ct_refusal(sub)? {
        bail!(why);
    }
    let ct = sub.family()?.ct.context("no ct driver")?;
    let mut plan = separate_plan(sub, inst, src, places)?;
    plan.steps.retain(|s| s.output.as_deref() == Some(LIBRARY));
    let lib = plan.steps.first_mut().context("no library step")?;
    let at = lib.argv.len() - 2; // before `-o libinstance.so`
    lib.argv.splice(at..at, [places.driver(CT_RANDOM), "-Wl,--wrap=get_random_number".into()]);
    let adapter = Adapter { define: Some("NGCC_CT"), ..Adapter::new("constant-time driver", ct.driver, false) };
    let mut driver = adapter_step(sub, inst, src, places, &plan.flags, adapter)?;
    if let Some(public) = public_sk_define(inst) {
        driver.argv.insert(2, public);
    }
    plan.steps.push(driver);
    for step in &mut plan.steps {
        step.argv.insert(1, "-g".into());
    }
    plan.run = vec![];
    plan.flag_set = format!("{}+ct", plan.flag_set);
    Ok(plan)
}

/// The manifest's public bytes of the secret key for the ct driver (`ct_core.h`'s
/// `ct_secret_key`): `-DNGCC_CT_PUBLIC_SK={from,to},...`.
fn public_sk_define(inst: &Instance) -> Option<String> {
    let ranges: Vec<String> = inst.ct_public_sk.iter().map(|r| format!("{{{}u,{}u}}", r.from, r.to)).collect();
    (!ranges.is_empty()).then(|| format!("-DNGCC_CT_PUBLIC_SK={}", ranges.join(",")))
}

/// Why `sub` has no constant-time variant, if it has none: a family with no secret
/// input, or no `[bench]` adapter on the cc recipe (the ct driver reaches the API
/// through the adapter).
pub fn ct_refusal(sub: &Submission) -> Result<Option<String>> {
    let family = sub.family()?;
    Ok(if family.ct.is_none() {
        Some(format!("{}: a {} has no secret input for ct to check", sub.id, family.noun))
    } else if sub.build.cmake.is_some() || sub.bench.is_none() {
        Some(format!(
            "{}: ct needs the cc recipe and a [bench] section (its driver reaches the API through the adapter)",
            sub.id
        ))
    } else {
        None
    })
}

/// What the sanitizer variant adds to every compiler command (`sanitize`).
pub const SANITIZE_FLAGS: [&str; 3] = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"];

/// The sanitizer variant of `inst` (`sanitize`): the reference plan, the one program
/// too, with [`SANITIZE_FLAGS`] after the compiler's name in every step, so the library
/// and every driver are instrumented and linked with the runtimes.
pub fn sanitize_plan(sub: &Submission, inst: &Instance, src: &Source, places: &Places) -> Result<Plan> {
    if let Some(why) = sanitize_refusal(sub) {
        bail!(why);
    }
    let mut plan = plan(sub, inst, src, places)?;
    for step in &mut plan.steps {
        if step.argv.first().map(String::as_str) != Some("gcc") {
            bail!("{}: step {} does not start with gcc", sub.id, step.what);
        }
        step.argv.splice(1..1, SANITIZE_FLAGS.map(String::from));
    }
    plan.flag_set = format!("{}+sanitize", plan.flag_set);
    Ok(plan)
}

/// Why `sub` has no sanitizer variant: the cmake recipe's compiler lines are cmake's.
pub fn sanitize_refusal(sub: &Submission) -> Option<String> {
    sub.build.cmake.is_some().then(|| format!("{}: sanitize needs the cc recipe (exact compiler lines)", sub.id))
}

/// The DRNG wrapper linked into the constant-time variant of a library.
pub const CT_RANDOM: &str = "ct_random.c";

/// The files `inst` must never compile. Each entry must name a file of the tree: an
/// entry that matches nothing protects nothing (a moved demo would be compiled).
fn never_compile(sub: &Submission, inst: &Instance, src: &Source) -> Result<Vec<String>> {
    let mut never = Vec::new();
    for entry in sub.build.never_compile.iter().chain(&inst.never_compile) {
        let rel = inst.expand(entry);
        if !src.root.join(&rel).is_file() {
            bail!(
                "{}: never_compile entry {entry:?} of instance {} matches no file ({rel} is not in {})",
                sub.locate(entry),
                inst.label,
                src.root
            );
        }
        never.push(rel);
    }
    Ok(never)
}

/// The manifest's instance facts for the drivers: the digest width (the header's
/// `DIGEST_BIT_LENGTH` is often one value for every instance) and a key exchange's passes.
fn digest_width(inst: &Instance) -> impl Iterator<Item = String> {
    let width = inst.digest_bits.map(|b| format!("-DNGCC_DIGEST_BITS={b}"));
    width.into_iter().chain(inst.passes.map(|p| format!("-DNGCC_KEX_PASSES={p}")))
}

/// `-DNGCC_NO_DRNG=1` where the submission defines `drng_algorithm`: every driver then
/// declares it only, as the library's definition is the one state.
fn drng_owner(sub: &Submission) -> Option<String> {
    sub.build.defines_drng.then(|| "-DNGCC_NO_DRNG=1".to_owned())
}

/// `-include <header>` for a header of the source tree, which must exist.
fn force_include(inst: &Instance, src: &Source, places: &Places, header: &str) -> Result<[String; 2]> {
    let h = inst.expand(header);
    let found = match h.strip_prefix("driver:") {
        Some(d) => project::drivers_dir().join(d).is_file(),
        None => src.root.join(&h).is_file(),
    };
    if !found {
        bail!("instance {}: API header {h} not found in {}", inst.label, src.root);
    }
    Ok(["-include".into(), program_path(places, &h)])
}

/// Output `<program>` in the build folder, linked to the instance library next to it.
fn link_to_library(program: &str) -> [String; 5] {
    ["-o".into(), program.into(), "-L.".into(), "-linstance".into(), "-Wl,-rpath,$ORIGIN".into()]
}

/// A harness driver reaching the API through the manifest's `[bench]` adapter.
struct Adapter {
    what: String,
    driver: Driver,
    optional: bool,
    /// A define that selects the driver's variant, first on its command line.
    define: Option<&'static str>,
}

impl Adapter {
    fn new(what: &str, driver: Driver, optional: bool) -> Adapter {
        Adapter { what: what.into(), driver, optional, define: None }
    }

    fn bench(family: &Family) -> Adapter {
        Adapter::new("timing driver", family.bench, true)
    }

    fn check(check: &Corroboration) -> Adapter {
        Adapter::new(&format!("{} driver", check.name), check.driver, false)
    }

    /// ct's timing mode, without valgrind (`ct_core.h`); optional like the timing driver.
    fn ct_timing(ct: &CtCheck) -> Adapter {
        Adapter { define: Some("NGCC_CT_TIMING=1"), ..Adapter::new("constant-time timing driver", ct.driver, true) }
    }
}

/// A harness driver compiled with the build's flags and linked to the instance
/// library; the manifest's `[bench]` picks the API adapter.
fn adapter_step(
    sub: &Submission,
    inst: &Instance,
    src: &Source,
    places: &Places,
    flags: &[String],
    adapter: Adapter,
) -> Result<Step> {
    let spec = sub.bench.as_ref().with_context(|| format!("{} has no [bench] section", sub.id))?;
    let mut argv = vec!["gcc".to_owned()];
    argv.extend(adapter.define.map(|d| format!("-D{d}")));
    argv.extend(flags.iter().cloned());
    // Force-included headers come before the driver's own #define.
    argv.push("-D_GNU_SOURCE".into());
    let parts = Parts::of(sub, inst, places.arch);
    argv.extend(parts.include.iter().map(|i| format!("-I{}", program_path(places, &inst.expand(i)))));
    argv.extend(parts.defines.into_iter().chain(&spec.defines).map(|d| format!("-D{}", inst.expand(d))));
    argv.extend(digest_width(inst));
    argv.extend(drng_owner(sub));
    argv.extend(force_include(inst, src, places, &spec.header)?);
    // Every driver of a family reaches the API through the family's adapter.
    let prefix = sub.family()?.adapter_prefix;
    argv.extend(["-include".into(), places.driver(&format!("{prefix}{}.h", spec.api.name()))]);
    argv.push(places.driver(adapter.driver.source));
    argv.extend(link_to_library(adapter.driver.program));
    let output = Some(adapter.driver.program.into());
    Ok(Step { what: adapter.what, argv, output, optional: adapter.optional })
}

/// Configure and build one target of the submission's `CMake` project.
fn cmake_plan(sub: &Submission, inst: &Instance, cmake: &CmakeSpec, flags: Vec<String>, places: &Places) -> Plan {
    let mut configure = vec![
        "cmake".to_owned(),
        "-S".into(),
        places.src(""),
        "-B".into(),
        ".".into(),
        "-G".into(),
        "Unix Makefiles".into(),
    ];
    configure.push(format!("-DCMAKE_C_FLAGS={}", flags.join(" ")));
    configure.extend(cmake.configure.iter().map(|c| inst.expand(c)));
    let build = vec![
        "cmake".to_owned(),
        "--build".into(),
        ".".into(),
        "--target".into(),
        cmake.target.clone(),
        "--parallel".into(),
        "2".into(),
    ];
    let run: Vec<String> = sub.kat.run.iter().map(|a| inst.expand(a)).collect();
    Plan {
        flag_set: sub.flag_set(inst),
        flags,
        steps: vec![
            Step { what: "cmake configure".into(), argv: configure, output: None, optional: false },
            Step { what: "cmake build".into(), argv: build, output: run.first().cloned(), optional: false },
        ],
        run,
        modes: Default::default(),
    }
}

/// `driver:<file>` is the harness's own driver; anything else is in the source tree.
fn program_path(places: &Places, p: &str) -> String {
    match p.strip_prefix("driver:") {
        Some(d) => places.driver(d),
        None => places.src(p),
    }
}

/// Expand one source pattern against the host tree (sorted, relative paths).
fn resolve(root: &Utf8Path, pattern: &str) -> Result<Vec<String>> {
    if let Some((dir, ext)) = glob(pattern) {
        let mut files: Vec<String> = root
            .join(dir)
            .read_dir_utf8()
            .with_context(|| format!("source folder {dir} not found in {root}"))?
            .filter_map(std::result::Result::ok)
            .filter(|e| e.file_name().ends_with(ext) && e.file_type().is_ok_and(|t| t.is_file()))
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

/// The official ICCS API files `sub` takes, where the build's inputs hold them.
fn iccs_sources(sub: &Submission, inst: &Instance, src: &Source) -> Result<Vec<String>> {
    let files = sub.iccs_files(inst);
    if files.is_empty() {
        return Ok(vec![]);
    }
    if src.iccs.is_none() {
        bail!("{}: [build] iccs needs the ICCS API package: {}", sub.id, crate::compile::iccs::SUPPLY);
    }
    Ok(files.iter().map(|f| format!("{ICCS_DIR}/{f}")).collect())
}

/// The files a manifest names for `inst`: compiled sources, KAT program sources of the
/// tree, the API and timing headers.
pub(crate) fn named_inputs(sub: &Submission, inst: &Instance, src: &Source, arch: Arch) -> Result<Vec<String>> {
    let mut named = Vec::new();
    if sub.build.cmake.is_none() {
        for pattern in Parts::of(sub, inst, arch).sources.into_iter().map(|p| inst.expand(p)) {
            if !pattern.starts_with("driver:") {
                named.extend(resolve(&src.root, &pattern)?);
            }
        }
    }
    named.extend(sub.kat.program.iter().map(|p| inst.expand(p)));
    named.extend(sub.kat.api_header.iter().chain(sub.bench.as_ref().map(|b| &b.header)).map(|h| inst.expand(h)));
    // The harness's own files are no part of the tree.
    named.retain(|p| !p.starts_with("driver:"));
    Ok(named)
}

/// Digest of the harness's drivers folder, so that a changed driver or adapter rebuilds.
pub fn drivers_digest() -> Result<String> {
    project::tree_digest(&project::drivers_dir())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::builder::{build_key, KeyInputs};
    use crate::compile::sources::{PatchRecord, Provenance};
    use crate::sha::Sha256Hex;
    use camino::Utf8PathBuf;

    const MANIFEST: &str = r#"id = "plan-test"
name = "plan test"
[source]
kind = "archive"
file = "a.zip"
bytes = 1
sha256 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
[build]
sources = ["{dir}/*.c", "common/c.c"]
include = ["{dir}", "common"]
never_compile = ["{dir}/demo.c"]
[kat]
program = ["driver:iccs_kem_kat.c"]
api_header = "{dir}/api.h"
file = "k_{label}.txt"
[bench]
api = "iccs"
header = "{dir}/api.h"
[[instance]]
label = "L1"
dir = "i1"
extra_flags = ["-DX=1"]
"#;

    /// A manifest, a source tree and its Source, all made here.
    fn fixture() -> (tempfile::TempDir, Submission, Source) {
        let t = tempfile::tempdir().unwrap();
        let root = Utf8PathBuf::from_path_buf(t.path().to_owned()).unwrap();
        for f in ["i1/a.c", "i1/b.c", "i1/demo.c", "i1/api.h", "common/c.c", "i1/notes.txt"] {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), "").unwrap();
        }
        let sub = Submission::from_text(&root.join("plan-test.toml"), MANIFEST).unwrap();
        let src = Source::new(
            root.clone(),
            Provenance::Directory {
                path: root.to_string(),
                tree_sha256: Sha256Hex::computed("b".repeat(64)),
                note: "test".into(),
            },
            vec![],
        );
        (t, sub, src)
    }

    /// The field's needs on the plan: per-instance sources and defines, `*.S` folders,
    /// per-architecture tables (only the one built for), libraries after the sources,
    /// the driver's record count, the harness flag set.
    #[test]
    fn instance_and_architecture_additions_reach_the_plan() {
        let (t, _, src) = fixture();
        let root = Utf8PathBuf::from_path_buf(t.path().to_owned()).unwrap();
        for f in ["i1/asm/x.S", "i1/asm/y.S", "i1/extra/only.c", "i1/extra/arm.c"] {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), "").unwrap();
        }
        let text = MANIFEST.replace("[kat]", "flag_set = \"harness\"\nlibs = [\"gmp\"]\n[build.arch.aarch64]\n\
             sources = [\"{dir}/extra/arm.c\"]\ndefines = [\"ARM=1\"]\nlibs = [\"m\"]\n[kat]")
            + "sources = [\"{dir}/extra/only.c\", \"{dir}/asm/*.S\", \"{dir}/a.c\"]\ndefines = [\"LEVEL={dir}\"]\nkat_records = 3\n";
        let sub = Submission::from_text(&root.join("plan-test.toml"), &text).unwrap();
        let inst = &sub.instances[0];
        let x86 = plan(&sub, inst, &src, &Places::container(Arch::X86_64)).unwrap();
        let lib = &x86.steps[0].argv;
        let at = |a: &str| lib.iter().position(|x| x == a).unwrap_or_else(|| panic!("{a} not in {lib:?}"));
        assert!(at("/src/i1/extra/only.c") < at("/src/i1/asm/x.S") && at("/src/i1/asm/y.S") < at("-lgmp"));
        // A file named twice (a folder and by name) is compiled once.
        assert_eq!(lib.iter().filter(|a| *a == "/src/i1/a.c").count(), 1, "{lib:?}");
        assert!(at("-DLEVEL=i1") < at("/src/i1/a.c"));
        assert!(!lib.iter().any(|a| a == "-DARM=1" || a == "/src/i1/extra/arm.c" || a == "-lm"), "{lib:?}");
        assert!(x86.flag_set.starts_with("harness") && x86.flags.contains(&"-std=gnu11".to_owned()));
        assert!(x86.steps[1].argv.contains(&"-DNGCC_KAT_RECORDS=3".to_owned()));
        let arm = plan(&sub, inst, &src, &Places::container(Arch::Aarch64)).unwrap();
        let lib = &arm.steps[0].argv;
        assert!(
            ["-DARM=1", "/src/i1/extra/arm.c", "-lm", "-lgmp"].iter().all(|a| lib.iter().any(|x| x == a)),
            "{lib:?}"
        );
        // A library the images do not provide is refused by name.
        let bad = MANIFEST.replace("[kat]", "libs = [\"ssl3\"]\n[kat]");
        let e = format!("{:#}", Submission::from_text(&root.join("plan-test.toml"), &bad).unwrap_err());
        assert!(e.contains("\"ssl3\" is not one the pinned images provide"), "{e}");
    }

    #[test]
    fn a_plan_is_the_manifest_expanded_against_the_tree() {
        let (_t, sub, src) = fixture();
        let p = plan(&sub, &sub.instances[0], &src, &Places::container(Arch::host())).unwrap();
        let lib = &p.steps[0].argv;
        let mut guide: Vec<&str> = crate::compile::submission::GUIDE_FLAGS.to_vec();
        guide.push("-DX=1");
        assert_eq!(p.flags, guide);
        assert_eq!(p.flag_set, "guide + -DX=1");
        // Sorted folder expansion, explicit files, never_compile left out.
        let srcs: Vec<&String> = lib.iter().filter(|a| a.ends_with(".c")).collect();
        assert_eq!(srcs, ["/src/i1/a.c", "/src/i1/b.c", "/src/common/c.c"]);
        assert!(lib.ends_with(&["-o".to_owned(), LIBRARY.to_owned()]));
        assert!(lib.contains(&"-I/src/i1".to_owned()) && lib.contains(&"-fPIC".to_owned()));
        let kat = &p.steps[1].argv;
        assert!(kat.contains(&"/drivers/iccs_kem_kat.c".to_owned()));
        assert!(kat.windows(2).any(|w| w == ["-include", "/src/i1/api.h"]));
        // The drivers are the modes of one program, each its own object.
        assert!(kat.ends_with(&["-Dmain=ngcc_mode_kat", "-r", "-nostdlib", "-o", "mode-kat.o"].map(String::from)));
        assert_eq!(p.steps[2].output.as_deref(), Some("mode-bench.o"));
        assert!(p.steps[2].optional && !p.steps[0].optional);
        assert_eq!(p.steps[3].output.as_deref(), Some("mode-check.o"));
        assert!(!p.steps[3].optional, "a PASS needs the replay");
        // ct's timing test runs the same program: its driver is a mode too, built without
        // valgrind, and optional.
        assert_eq!(p.steps[4].output.as_deref(), Some("mode-ct.o"));
        assert!(p.steps[4].optional && p.steps[4].argv[1] == "-DNGCC_CT_TIMING=1", "{:?}", p.steps[4].argv);
        let link = &p.steps[5].argv;
        assert_eq!(p.steps[5].output.as_deref(), Some(PROGRAM));
        assert!(link.contains(&"/drivers/candidate.c".to_owned()) && link.contains(&"mode-bench.o".to_owned()));
        let libc = link.iter().position(|a| a == "-lc").unwrap();
        assert!(libc < link.iter().position(|a| a == "-linstance").unwrap(), "libc before the library: {link:?}");
        assert_eq!(p.run, [KAT_PROGRAM]);
        assert_eq!(p.program_of(KAT_PROGRAM), (PROGRAM, Some("kat")));
        assert_eq!(p.program_of("kem_bench"), (PROGRAM, Some("bench")));
        assert_eq!(p.program_of("kem_replay"), (PROGRAM, Some("check")));
        assert_eq!(p.program_of("kem_ct"), (PROGRAM, Some("ct")));
        // Profile and ct variants keep a program per driver.
        let prof = separate_plan(&sub, &sub.instances[0], &src, &Places::container(Arch::host())).unwrap();
        assert!(prof.modes.is_empty() && prof.steps[2].output.as_deref() == Some("kem_bench"));
    }

    #[test]
    fn plans_name_no_output_folder_and_keys_follow_every_input() {
        let (_t, sub, src) = fixture();
        let p = plan(&sub, &sub.instances[0], &src, &Places::container(Arch::host())).unwrap();
        let text = serde_json::to_string(&p).unwrap();
        assert!(!text.contains("/build") && !text.contains("ngcc-repro"), "{text}");
        let key = |plan: &Plan, compilers: &str, patches: &[PatchRecord]| {
            build_key(&KeyInputs { compilers: compilers.into(), source: "s", patches, drivers: "d".into(), plan })
        };
        let k = key(&p, "image 1", &[]);
        assert_eq!(k, key(&p.clone(), "image 1", &[]));
        assert_ne!(k, key(&p, "image 2", &[]));
        let patch = PatchRecord {
            file: "p".into(),
            sha256: Sha256Hex::computed("c".repeat(64)),
            reason: "r".into(),
            arches: vec![],
        };
        assert_ne!(k, key(&p, "image 1", &[patch]));
        let mut flags = p.clone();
        flags.steps[0].argv.push("-O3".into());
        assert_ne!(k, key(&flags, "image 1", &[]));
        // The host sees the same plan with host paths.
        let host = plan(&sub, &sub.instances[0], &src, &Places::new(Backend::Host, &src.root, Arch::host())).unwrap();
        assert!(host.steps[0].argv.contains(&format!("{}/i1/a.c", src.root)));
    }

    #[test]
    fn plans_refuse_what_the_tree_does_not_have() {
        let (_t, sub, src) = fixture();
        std::fs::remove_file(src.root.join("i1/demo.c")).unwrap();
        let e = format!("{:#}", check(&sub, &sub.instances[0], &src, Arch::host()).unwrap_err());
        assert!(e.contains("never_compile entry \"{dir}/demo.c\"") && e.contains("matches no file"), "{e}");
        std::fs::write(src.root.join("i1/demo.c"), "").unwrap();
        std::fs::remove_file(src.root.join("i1/api.h")).unwrap();
        assert!(format!("{:#}", check(&sub, &sub.instances[0], &src, Arch::host()).unwrap_err()).contains("API header"));
    }
}
