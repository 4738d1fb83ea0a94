//! What a page says of each instance's library as the host read it from its ELF file
//! (`measure::elf`, recorded by `verify` in the KAT summary): its code size in §5 and
//! the "Exported symbols" section, flagged names first.

use std::fmt::Write as _;

use anyhow::Result;

use crate::evidence::schema::{Clash, InstanceResult, LibraryElf, Summary};
use crate::measure::elf::RULES;
use crate::pages::md;

/// The instances with a reading of their library, or what the page says instead.
fn read(kat: Option<&Summary>) -> std::result::Result<Vec<(&InstanceResult, &LibraryElf)>, &'static str> {
    let Some(k) = kat else { return Err("Not read: no KAT summary in this evidence set (`cargo xtask verify`).") };
    let read: Vec<_> = k.instances.iter().filter_map(|i| Some((i, i.library.as_ref()?))).collect();
    if read.is_empty() {
        return Err("Not read: the KAT summary holds no reading of the libraries (it predates it, or no \
                    instance built); run `cargo xtask verify` again.");
    }
    Ok(read)
}

/// The code-size part of §5.
pub fn code_size(w: &mut String, kat: Option<&Summary>) -> Result<()> {
    writeln!(
        w,
        "\nCode size is of each instance's library as built (`libinstance.so`: the candidate's code and what its \
         manifest compiles in with it; not the driver, not libc), read by the host from the ELF file's section \
         headers, never run, and summed as binutils' `size` counts them: text is every allocated section that is \
         executable or read-only (machine code, constants, and the shared object's dynamic-linking tables and \
         unwind data), code the executable sections alone (part of text), data the writable sections with \
         contents, bss the zero-initialised ones. The figures include the few hundred bytes of start-up code \
         (`.init`, `.fini`, `.plt`) the toolchain puts in every shared object. The bytes read are those whose \
         SHA-256 the host recorded after the build.\n"
    )?;
    let read = match read(kat) {
        Ok(r) => r,
        Err(why) => {
            writeln!(w, "{why}")?;
            return Ok(());
        }
    };
    writeln!(
        w,
        "| instance | text (bytes) | code (bytes) | data (bytes) | bss (bytes) | file |\n|---|---|---|---|---|---|"
    )?;
    for (i, lib) in read {
        let label = md(&i.label);
        match (&lib.error, &lib.size) {
            (None, Some(s)) => {
                writeln!(w, "| {label} | {} | {} | {} | {} | {} |", s.text, s.code, s.data, s.bss, md(&lib.format))?
            }
            (error, _) => {
                writeln!(w, "| {label} | not read: {} | | | | |", md(error.as_deref().unwrap_or("no sizes")))?
            }
        }
    }
    Ok(())
}

/// The "Exported symbols" section.
pub fn exported(w: &mut String, kat: Option<&Summary>) -> Result<()> {
    writeln!(w, "\n## Exported symbols\n")?;
    writeln!(
        w,
        "Method: the names each library exports (the defined global and weak symbols of its dynamic symbol table, \
         `.dynsym`, with default or protected visibility), read by the host from the ELF file, never run. A name \
         is flagged when another library or the harness would define it too in one process: the dynamic linker \
         binds every reference in a process to the first definition, so one library's function silently \
         replaces another's (PQClean's namespace test refuses such names for the same reason). A flagged name is \
         a finding for whoever links the library beside others, not a KAT status. The full lists are in the KAT \
         summary (`library.exported` of each instance).\n"
    )?;
    let read = match read(kat) {
        Ok(r) => r,
        Err(why) => {
            writeln!(w, "{why}")?;
            return Ok(());
        }
    };
    writeln!(w, "| instance | exported | flagged |\n|---|---|---|")?;
    for (i, lib) in &read {
        let flagged: usize = lib.clashes.iter().map(|c| c.symbols.len()).sum();
        match &lib.error {
            None => writeln!(w, "| {} | {} | {flagged} |", md(&i.label), lib.exported_count)?,
            Some(e) => writeln!(w, "| {} | not read: {} | |", md(&i.label), md(e))?,
        }
    }
    // One row per rule and set of names, with every instance that has exactly those.
    let mut rows: Vec<(Vec<&str>, &Clash)> = Vec::new();
    for (i, lib) in &read {
        for c in &lib.clashes {
            match rows.iter_mut().find(|(_, r)| r.rule == c.rule && r.symbols == c.symbols) {
                Some((labels, _)) => labels.push(&i.label),
                None => rows.push((vec![&i.label], c)),
            }
        }
    }
    if rows.is_empty() {
        writeln!(w, "\nNo exported name is flagged.")?;
        return Ok(());
    }
    writeln!(w, "\nFlagged names, by rule (instances with the same names share a row):\n")?;
    writeln!(w, "| instances | rule | why it clashes | names |\n|---|---|---|---|")?;
    for (labels, c) in rows {
        let labels: Vec<String> = labels.iter().map(|l| md(l)).collect();
        let names: Vec<String> = c.symbols.iter().map(|n| md(n)).collect();
        // The rule's own words where this harness knows the rule, else the record's, escaped.
        let why = RULES.iter().find(|r| r.id == c.rule).map_or_else(|| md(&c.why), |r| r.why.to_owned());
        writeln!(w, "| {} | {} | {why} | {} |", labels.join(", "), md(&c.rule), names.join(", "))?;
    }
    Ok(())
}
