//! The SVG charts of the pages: rows of dots on a logarithmic axis, one row per label
//! in the order given (the manifest's), one colour per series, with an optional range
//! line (fastest to slowest trial) through each dot. Dots rather than bars: a bar on a
//! log axis has no zero to start from, so its length says nothing.
//!
//! Written here rather than with a plotting crate: every coordinate is printed with a
//! fixed precision so the bytes are reproducible, and no font files or text-measuring
//! code enter the build (text widths are estimated from character counts).

use std::fmt::Write as _;

use crate::pages::esc;

const COLORS: [&str; 8] = ["#4477aa", "#ee6677", "#228833", "#aa7700", "#66ccee", "#aa3377", "#777777", "#ccbb44"];
/// Estimated width of one character at the charts' 11 px font.
const CHAR_W: f64 = 6.6;
/// Longest label shown in full; longer ones are cut with an ellipsis.
const LABEL_MAX: usize = 40;
const WIDTH: f64 = 720.0;

/// One drawn value, with the range it stands for.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub value: f64,
    pub range: Option<(f64, f64)>,
    /// Drawn as a ring (a replaced trial).
    pub hollow: bool,
}

impl Point {
    pub fn dot(value: f64) -> Point {
        Point { value, range: None, hollow: false }
    }
}

/// One row: a label and, per series, its points (none where it has no figure).
#[derive(Debug, Clone)]
pub struct Row {
    pub label: String,
    pub points: Vec<Vec<Point>>,
}

/// What the axis measures: times in ns, ratios around 1, or a plain count (cycles or
/// ticks per byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Time,
    Ratio,
    Count,
}

pub struct Chart<'a> {
    pub rows: &'a [Row],
    pub series: &'a [&'a str],
    /// The axis title without unit (the unit is the scale's).
    pub axis: &'a str,
    pub scale: Scale,
}

/// The axis: its ends, unit (name, ns per unit) and ticks.
struct Axis {
    lo: f64,
    hi: f64,
    unit: (&'static str, f64),
    ticks: Vec<f64>,
}

/// The width of `text` at `px` pixels in the pages' sans-serif font, estimated from
/// DejaVu Sans's advance widths (per em), the widest of the usual defaults, so a label
/// area sized by it holds the label whatever the reader's font. Bold adds 10 %.
pub fn text_width(text: &str, px: f64) -> f64 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | 'I' | 'J' | '\'' | '|' => 0.30,
            ' ' | '.' | ',' | ':' | ';' | '·' | '!' => 0.34,
            'f' | 't' | '-' | '(' | ')' | '[' | ']' | '/' => 0.40,
            'r' => 0.42,
            's' | 'z' | 'c' | '_' => 0.56,
            'm' => 0.98,
            'w' => 0.82,
            'M' => 0.87,
            'W' => 0.99,
            c if c.is_ascii_lowercase() || c.is_ascii_digit() => 0.64,
            'D' | 'G' | 'H' | 'N' | 'O' | 'Q' | 'U' => 0.79,
            c if c.is_ascii_uppercase() => 0.70,
            '=' | '+' | '<' | '>' | '×' | '~' => 0.84,
            c if c.is_ascii() => 0.70,
            _ => 1.0,
        })
        .sum();
    em * px
}

fn shown(label: &str) -> String {
    if label.chars().count() <= LABEL_MAX {
        label.to_owned()
    } else {
        format!("{}…", label.chars().take(LABEL_MAX - 1).collect::<String>())
    }
}

pub fn draw(c: &Chart) -> String {
    let values: Vec<f64> = c
        .rows
        .iter()
        .flat_map(|r| r.points.iter().flatten())
        .flat_map(|p| [Some(p.value), p.range.map(|r| r.0), p.range.map(|r| r.1)])
        .flatten()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let axis = match c.scale {
        Scale::Time => time_axis(&values),
        Scale::Ratio => ratio_axis(&values),
        Scale::Count => count_axis(&values),
    };
    let widest = c.rows.iter().map(|r| shown(&r.label).chars().count()).max().unwrap_or(0);
    let left = (12.0 + CHAR_W * widest as f64).max(60.0);
    let per = c.series.len().max(1) as f64;
    let row_h = (8.0 * per + 8.0).max(18.0);
    let top = 10.0;
    let plot_bottom = top + row_h * c.rows.len() as f64;
    let legend = if c.series.len() > 1 { legend_places(c.series, left) } else { Vec::new() };
    let ht = plot_bottom + 48.0 + 20.0 * legend.last().map_or(0.0, |p| p.1 + 1.0);
    let span = (axis.hi.ln() - axis.lo.ln()).max(f64::MIN_POSITIVE);
    let x = |v: f64| left + (WIDTH - left - 20.0) * (v.clamp(axis.lo, axis.hi).ln() - axis.lo.ln()) / span;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{ht}\" viewBox=\"0 0 {WIDTH} {ht}\" \
         role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\n"
    );
    for &t in &axis.ticks {
        let _ = writeln!(
            s,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{top}\" y2=\"{plot_bottom}\" stroke=\"{2}\"/>\
             <text x=\"{0:.1}\" y=\"{1}\" text-anchor=\"middle\">{3}</text>",
            x(t),
            plot_bottom + 14.0,
            if c.scale == Scale::Ratio && t == 1.0 { "#888" } else { "#ddd" },
            tick_label(t, &axis)
        );
    }
    let title = match c.scale {
        Scale::Time if one_unit(&axis) => format!("{} ({}, log scale)", c.axis, axis.unit.0),
        Scale::Time => format!("{} (log scale, unit on each tick)", c.axis),
        Scale::Ratio | Scale::Count => format!("{} (log scale)", c.axis),
    };
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
        (left + WIDTH - 20.0) / 2.0,
        plot_bottom + 32.0,
        esc(&title)
    );
    for (i, row) in c.rows.iter().enumerate() {
        let y0 = top + row_h * i as f64;
        if i > 0 {
            let _ =
                writeln!(s, "<line x1=\"0\" x2=\"{}\" y1=\"{y0:.1}\" y2=\"{y0:.1}\" stroke=\"#eee\"/>", WIDTH - 20.0);
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y0 + row_h / 2.0 + 4.0,
            esc(&shown(&row.label))
        );
        for (k, points) in row.points.iter().enumerate() {
            let cy = y0 + row_h / 2.0 + 8.0 * (k as f64 - (per - 1.0) / 2.0);
            let color = COLORS[k % COLORS.len()];
            let name = c.series.get(k).copied().unwrap_or("");
            for p in points.iter().filter(|p| p.value.is_finite() && p.value > 0.0) {
                point(&mut s, (x, cy, color), p, &format!("{} {name}: {}", row.label, value_text(p, c.scale)));
            }
        }
    }
    legend_row(&mut s, c.series, &legend, plot_bottom + 60.0);
    s.push_str("</svg>\n");
    s
}

fn point(s: &mut String, (x, cy, color): (impl Fn(f64) -> f64, f64, &str), p: &Point, title: &str) {
    if let Some((a, b)) = p.range {
        let _ = writeln!(
            s,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{cy:.1}\" y2=\"{cy:.1}\" stroke=\"{color}\" stroke-width=\"1.5\"/>",
            x(a),
            x(b)
        );
    }
    let fill = if p.hollow { "none" } else { color };
    let _ = writeln!(
        s,
        "<circle cx=\"{:.1}\" cy=\"{cy:.1}\" r=\"3.5\" fill=\"{fill}\" stroke=\"{color}\"><title>{}</title></circle>",
        x(p.value),
        esc(title)
    );
}

fn value_text(p: &Point, scale: Scale) -> String {
    let one = |v: f64| match scale {
        Scale::Time => crate::pages::forms::time(v),
        Scale::Ratio => format!("{v:.3}"),
        Scale::Count => format!("{v:.1}"),
    };
    match p.range {
        Some((a, b)) => format!("{} ({} – {})", one(p.value), one(a), one(b)),
        None => one(p.value),
    }
}

/// A tick in the axis unit, or with its own unit when the axis spans more than one.
fn tick_label(t: f64, axis: &Axis) -> String {
    // A unitless axis (ratios, counts) has no unit to change to.
    if axis.unit.0.is_empty() && t >= 1000.0 {
        format!("{t:.0}")
    } else if axis.unit.0.is_empty() || one_unit(axis) {
        crate::pages::forms::rate(t / axis.unit.1)
    } else {
        crate::pages::forms::time(t)
    }
}

/// Whether every tick reads below 1000 in the unit of the axis's lower end.
fn one_unit(axis: &Axis) -> bool {
    axis.ticks.iter().all(|t| t / axis.unit.1 < 1000.0)
}

/// Decades from the fastest to the slowest value, in the unit of the lower end; with
/// two decades or fewer, 2 and 5 of each decade too.
fn time_axis(values: &[f64]) -> Axis {
    let (min, max) = bounds(values, (1.0, 10.0));
    let lo_e = min.max(1.0).log10().floor().min(306.0);
    let hi_e = max.max(1.0).log10().ceil().clamp(lo_e + 1.0, 307.0);
    let (lo, hi) = (10f64.powf(lo_e), 10f64.powf(hi_e));
    let unit = [("s", 1e9), ("ms", 1e6), ("µs", 1e3)].into_iter().find(|u| lo >= u.1).unwrap_or(("ns", 1.0));
    let decades = (hi_e - lo_e) as usize;
    let stride = decades.div_ceil(10).max(1);
    let mut ticks = Vec::new();
    for d in (0..=decades).step_by(stride) {
        let base = lo * 10f64.powi(d as i32);
        ticks.push(base);
        if decades <= 2 {
            ticks.extend([2.0 * base, 5.0 * base].into_iter().filter(|t| *t < hi));
        }
    }
    Axis { lo, hi, unit, ticks }
}

/// Decades as the time axis draws them, without a unit (ticks at 0.1, 1, 10 …).
fn count_axis(values: &[f64]) -> Axis {
    let scaled: Vec<f64> = values.iter().map(|v| v * 1e3).collect();
    let t = time_axis(&scaled);
    Axis { lo: t.lo / 1e3, hi: t.hi / 1e3, unit: ("", 1.0), ticks: t.ticks.iter().map(|v| v / 1e3).collect() }
}

/// Symmetric around 1 on the log scale, at least ±2 %; ticks at round ratios
/// (1 ± k·step, or 1-2-5 multiples for wide ranges), each drawn where it is.
fn ratio_axis(values: &[f64]) -> Axis {
    let (min, max) = bounds(values, (1.0, 1.0));
    let m = (max.ln().abs().max(min.ln().abs()) * 1.15).clamp(0.02_f64.ln_1p(), 700.0);
    let (mut lo, mut hi) = ((-m).exp(), m.exp());
    let mut ticks = Vec::new();
    if hi > 3.0 {
        let e = hi.log10().ceil() as i32;
        let stride = (2 * e as usize).div_ceil(10).max(1);
        let factors: &[f64] = if e <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
        for d in (-e..=e).step_by(stride) {
            let near = factors.iter().map(|f| f * 10f64.powi(d));
            ticks.extend(near.filter(|t| *t >= lo && *t <= hi));
        }
    } else {
        let steps = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5];
        let step = steps.into_iter().find(|s| (hi - 1.0) / s <= 3.0).unwrap_or(0.5);
        // The axis ends at the first tick beyond each end.
        let n = ((1.0 - lo) / step - 1e-9).ceil().min((1.0 / step).floor() - 1.0) as i32;
        let p = ((hi - 1.0) / step - 1e-9).ceil() as i32;
        (lo, hi) = (1.0 - f64::from(n) * step, 1.0 + f64::from(p) * step);
        ticks.extend((-n..=p).map(|k| 1.0 + f64::from(k) * step));
    }
    Axis { lo, hi, unit: ("", 1.0), ticks }
}

fn bounds(values: &[f64], empty: (f64, f64)) -> (f64, f64) {
    if values.is_empty() {
        return empty;
    }
    (values.iter().copied().fold(f64::INFINITY, f64::min), values.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

/// Where each legend entry starts (x, line): entries as wide as their names, left to
/// right, and on a new line where one would pass the chart's edge (8 hash sizes do).
fn legend_places(series: &[&str], left: f64) -> Vec<(f64, f64)> {
    let (mut x, mut line) = (left, 0.0);
    let mut places = Vec::new();
    for name in series {
        let text = CHAR_W * shown(name).chars().count() as f64;
        if x > left && x + 12.0 + text > WIDTH - 4.0 {
            (x, line) = (left, line + 1.0);
        }
        places.push((x, line));
        x += 28.0 + text;
    }
    places
}

/// The series' colours and names at their places, the first line's baseline at `y`.
fn legend_row(s: &mut String, series: &[&str], places: &[(f64, f64)], y: f64) {
    for (k, (name, &(x, line))) in series.iter().zip(places).enumerate() {
        let y = y + 20.0 * line;
        let _ = writeln!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{y}\">{}</text>",
            x + 4.0,
            y - 4.0,
            COLORS[k % COLORS.len()],
            x + 12.0,
            esc(&shown(name))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_axis_is_positive_and_a_time_axis_has_its_unit() {
        let r = ratio_axis(&[0.5, 0.998, 1.011]);
        assert!(r.lo > 0.0 && r.ticks.iter().all(|t| *t > 0.0 && *t >= r.lo && *t <= r.hi), "{:?}", r.ticks);
        let narrow = ratio_axis(&[0.995, 1.011]);
        assert!(narrow.ticks.contains(&1.0) && narrow.ticks.len() >= 3, "{:?}", narrow.ticks);
        assert_eq!((narrow.ticks[0], narrow.lo, *narrow.ticks.last().unwrap(), narrow.hi), (0.98, 0.98, 1.02, 1.02));
        let wide = ratio_axis(&[0.01, 50.0]);
        assert!(wide.ticks.contains(&1.0) && wide.ticks.contains(&10.0), "{:?}", wide.ticks);
        let t = time_axis(&[18_200.0, 67_400.0]);
        assert_eq!((t.lo, t.hi, t.unit.0), (10_000.0, 100_000.0, "µs"));
        assert_eq!(t.ticks, [10e3, 20e3, 50e3, 100e3]);
        let labels: Vec<String> = t.ticks.iter().map(|v| tick_label(*v, &t)).collect();
        assert_eq!(labels, ["10", "20", "50", "100"]);
        let wide = time_axis(&[71_300.0, 11.9e6]);
        let labels: Vec<String> = wide.ticks.iter().map(|v| tick_label(*v, &wide)).collect();
        assert_eq!(labels, ["10 µs", "100 µs", "1 ms", "10 ms", "100 ms"]);
        // Hostile figures: no endless tick loop, no NaN on the page.
        let huge = time_axis(&[1.0, 1e300]);
        assert!(huge.ticks.len() <= 12, "{}", huge.ticks.len());
        let c = count_axis(&[3.2, 410.0]);
        assert_eq!((c.lo, c.hi, c.unit.0), (1.0, 1000.0, ""));
        let labels: Vec<String> = c.ticks.iter().map(|v| tick_label(*v, &c)).collect();
        assert_eq!(labels, ["1", "10", "100", "1000"]);
        let rows = [Row { label: "<x>".into(), points: vec![vec![Point::dot(f64::NAN), Point::dot(-1.0)]] }];
        let svg = draw(&Chart { rows: &rows, series: &["a"], axis: "time", scale: Scale::Time });
        assert!(!svg.contains("NaN") && !svg.contains("<x>") && svg.contains("&lt;x&gt;"), "{svg}");
    }

    /// A hash function's eight sizes do not fit one line beside long labels: the legend
    /// wraps inside the chart, and the chart grows by its lines.
    #[test]
    fn the_legend_wraps_inside_the_chart() {
        let series =
            ["hash_32", "hash_128", "hash_512", "hash_1024", "hash_4096", "hash_8192", "hash_16384", "hash_65536"];
        let left = 12.0 + CHAR_W * 14.0;
        let places = legend_places(&series, left);
        for (name, (x, _)) in series.iter().zip(&places) {
            assert!(x + 12.0 + CHAR_W * name.len() as f64 <= WIDTH - 4.0, "{name} at {x}");
        }
        assert!(places.last().unwrap().1 >= 1.0, "{places:?}");
        let rows = [Row { label: "AFS-TrEDM-1024".into(), points: vec![vec![Point::dot(1e3)]; 8] }];
        let svg = draw(&Chart { rows: &rows, series: &series, axis: "time", scale: Scale::Time });
        let lines = places.last().unwrap().1 + 1.0;
        let height = format!("height=\"{}\"", 10.0 + 72.0 + 48.0 + 20.0 * lines);
        assert!(svg.contains(&height), "{height}: {svg}");
    }
}
