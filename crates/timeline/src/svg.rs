//! The waterfall as hand-written SVG: a lane per worker, a `rect` per stage bar
//! (`class="bar synth"`, `"bar prove"`, `"bar params"`) coloured by job with a `<title>`
//! tooltip, hatched device-lock waits, thin GPU-phase bars, job end marks and a time axis.

use std::fmt::Write;

use crate::waterfall::{Bar, JobEnd, Stage, Waterfall};

/// Drawing options.
#[derive(Clone, Debug)]
pub struct SvgOptions {
    /// Total width in pixels.
    pub width: f64,
    pub title: String,
}

impl Default for SvgOptions {
    fn default() -> Self {
        Self {
            width: 1200.0,
            title: "zkforge TIMELINE".into(),
        }
    }
}

const LABEL_W: f64 = 120.0;
const RIGHT_PAD: f64 = 20.0;
const TOP: f64 = 56.0;
const LANE_H: f64 = 26.0;
const BAR_H: f64 = 18.0;
const PHASE_H: f64 = 5.0;
const MARK_H: f64 = 16.0;

/// Escapes text for XML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A duration for people: ms below a second, else seconds.
pub fn format_ms(ms: f64) -> String {
    if ms.abs() >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms.abs() >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

/// A job's colour: golden-angle hues so neighbouring job ids differ.
fn job_hue(job: Option<u64>) -> f64 {
    job.map_or(0.0, |j| (j as f64 * 137.508) % 360.0)
}

fn bar_fill(b: &Bar) -> String {
    match (b.stage, b.job) {
        (_, None) => "#888".into(),
        (Stage::Prove, j) => format!("hsl({:.0},65%,45%)", job_hue(j)),
        (_, j) => format!("hsl({:.0},60%,68%)", job_hue(j)),
    }
}

fn phase_fill(name: &str) -> &'static str {
    match name {
        "h2d" | "d2h" => "#222",
        "ntt" => "#d62728",
        "msm" => "#1f77b4",
        "kernels" => "#ff7f0e",
        _ => "#555",
    }
}

/// Linear time → x mapping over the drawn range.
struct Scale {
    t0: f64,
    t1: f64,
    x0: f64,
    x1: f64,
}

impl Scale {
    fn x(&self, t: f64) -> f64 {
        self.x0 + (t - self.t0) / (self.t1 - self.t0) * (self.x1 - self.x0)
    }
}

/// The time range drawn: every bar, submit and job end.
fn range(w: &Waterfall) -> (f64, f64) {
    let times = w
        .bars
        .iter()
        .flat_map(|b| [b.start_ms - b.lock_wait_ms, b.end_ms])
        .chain(w.submits.iter().copied())
        .chain(w.job_ends.iter().map(|m| m.t_ms))
        .chain(w.phases.iter().flat_map(|p| [p.start_ms, p.end_ms]));
    let (lo, hi) = times.fold((f64::MAX, f64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    if lo > hi {
        (0.0, 1.0)
    } else if hi - lo < 1e-6 {
        (lo, lo + 1.0)
    } else {
        (lo, hi)
    }
}

/// A tick step of 1, 2 or 5 × 10^k giving about `target` ticks.
fn tick_step(span: f64, target: f64) -> f64 {
    let raw = span / target;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

fn lane_y(i: usize) -> f64 {
    TOP + i as f64 * LANE_H
}

/// The `<svg>` element (no XML declaration: it embeds in HTML as is).
pub fn render(w: &Waterfall, opts: &SvgOptions) -> String {
    let (t0, t1) = range(w);
    let scale = Scale {
        t0,
        t1,
        x0: LABEL_W,
        x1: opts.width - RIGHT_PAD,
    };
    let lanes_bottom = lane_y(w.lanes.len());
    let height = lanes_bottom + MARK_H + 40.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{height:.0}" viewBox="0 0 {:.0} {height:.0}" font-family="sans-serif" font-size="11">"#,
        opts.width, opts.width
    );
    s.push_str(concat!(
        r#"<defs><pattern id="lockwait" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">"#,
        r##"<rect width="4" height="4" fill="#eee"/><line x1="0" y1="0" x2="0" y2="4" stroke="#999" stroke-width="2"/></pattern></defs>"##,
        "\n"
    ));
    let _ = writeln!(
        s,
        r#"<text x="8" y="18" font-size="14" font-weight="bold">{}</text>"#,
        escape(&opts.title)
    );
    let _ = writeln!(
        s,
        r##"<text x="8" y="34" fill="#555">colour: job · light: synthesis, dark: prove · hatched: device-lock wait · thin: GPU phases · ticks below: job done (red: failed)</text>"##
    );
    axis(&mut s, &scale, lanes_bottom + MARK_H);
    lanes(&mut s, w, &scale);
    bars(&mut s, w, &scale);
    phases(&mut s, w, &scale);
    marks(&mut s, w, &scale, lanes_bottom);
    s.push_str("</svg>\n");
    s
}

/// A standalone SVG file.
pub fn document(w: &Waterfall, opts: &SvgOptions) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}",
        render(w, opts)
    )
}

fn axis(s: &mut String, scale: &Scale, bottom: f64) {
    let step = tick_step(scale.t1 - scale.t0, 8.0);
    let mut t = (scale.t0 / step).ceil() * step;
    s.push_str("<g class=\"axis\">\n");
    while t <= scale.t1 + step * 1e-9 {
        let x = scale.x(t);
        let label = if step >= 1000.0 {
            format!("{:.*} s", decimals(step / 1000.0), t / 1000.0)
        } else {
            format!("{:.*} ms", decimals(step), t)
        };
        let _ = writeln!(
            s,
            r##"<line x1="{x:.2}" y1="{:.2}" x2="{x:.2}" y2="{bottom:.2}" stroke="#ddd" stroke-dasharray="2,2"/><text x="{x:.2}" y="{:.2}" text-anchor="middle" fill="#333">{label}</text>"##,
            TOP - 4.0,
            bottom + 14.0
        );
        t += step;
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.2}" y="{:.2}" text-anchor="end" fill="#555">engine time (t_ms)</text>"##,
        scale.x1,
        bottom + 30.0
    );
    s.push_str("</g>\n");
}

/// Digits after the point that a tick step needs.
fn decimals(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    }
}

fn lanes(s: &mut String, w: &Waterfall, scale: &Scale) {
    s.push_str("<g class=\"lanes\">\n");
    for (i, lane) in w.lanes.iter().enumerate() {
        let y = lane_y(i);
        let fill = if i % 2 == 0 { "#f7f7f7" } else { "#ffffff" };
        let _ = writeln!(
            s,
            r#"<rect class="lane" x="{:.2}" y="{y:.2}" width="{:.2}" height="{LANE_H}" fill="{fill}"/><text x="8" y="{:.2}">{}</text>"#,
            scale.x0,
            scale.x1 - scale.x0,
            y + LANE_H / 2.0 + 4.0,
            escape(&lane.name)
        );
    }
    s.push_str("</g>\n");
}

fn bars(s: &mut String, w: &Waterfall, scale: &Scale) {
    s.push_str("<g class=\"bars\">\n");
    for b in &w.bars {
        let y = lane_y(b.lane) + (LANE_H - BAR_H) / 2.0;
        if b.lock_wait_ms > 0.0 {
            let x = scale.x(b.start_ms - b.lock_wait_ms);
            let _ = writeln!(
                s,
                r#"<rect class="lockwait" x="{x:.2}" y="{y:.2}" width="{:.2}" height="{BAR_H}" fill="url(#lockwait)"><title>{} · device-lock wait {}</title></rect>"#,
                (scale.x(b.start_ms) - x).max(0.0),
                escape(&who(b)),
                format_ms(b.lock_wait_ms)
            );
        }
        let class = match b.stage {
            Stage::Synthesis => "bar synth",
            Stage::Prove => "bar prove",
            Stage::ParamLoad => "bar params",
        };
        let x = scale.x(b.start_ms);
        let dash = if b.open {
            r##" stroke="#000" stroke-dasharray="3,2""##
        } else {
            ""
        };
        let width = (scale.x(b.end_ms) - x).max(0.5);
        let _ = writeln!(
            s,
            r#"<rect class="{class}" x="{x:.2}" y="{y:.2}" width="{width:.2}" height="{BAR_H}" fill="{}"{dash}><title>{}</title></rect>"#,
            bar_fill(b),
            escape(&tooltip(b))
        );
        label(s, b, x, y, width);
        inner_wait(s, b, scale, x, y);
    }
    s.push_str("</g>\n");
}

/// Lock wait inside a prove call: a hatched strip along the top of the bar, from its start
/// (the log gives the length, not the place).
fn inner_wait(s: &mut String, b: &Bar, scale: &Scale, x: f64, y: f64) {
    if b.inner_lock_wait_ms <= 0.0 {
        return;
    }
    let width = (scale.x(b.start_ms + b.inner_lock_wait_ms) - x).max(0.5);
    let _ = writeln!(
        s,
        r#"<rect class="lockwait-inner" x="{x:.2}" y="{y:.2}" width="{width:.2}" height="4" fill="url(#lockwait)"><title>{} · device-lock wait inside the prove call {} (position not logged)</title></rect>"#,
        escape(&who(b)),
        format_ms(b.inner_lock_wait_ms)
    );
}

/// "job·partition" inside bars wide enough to hold it.
fn label(s: &mut String, b: &Bar, x: f64, y: f64, width: f64) {
    let Some(job) = b.job else { return };
    let text = match b.partition {
        Some(k) => format!("{job}·{k}"),
        None => job.to_string(),
    };
    // About 6 px per character at font-size 10, plus a margin.
    if width < 6.0 * text.chars().count() as f64 + 6.0 {
        return;
    }
    let colour = if b.stage == Stage::Prove {
        "#fff"
    } else {
        "#222"
    };
    let _ = writeln!(
        s,
        r#"<text class="label" x="{:.2}" y="{:.2}" text-anchor="middle" font-size="10" fill="{colour}" pointer-events="none">{text}</text>"#,
        x + width / 2.0,
        y + BAR_H / 2.0 + 3.5
    );
}

fn who(b: &Bar) -> String {
    let job = b.job.map_or("job ?".into(), |j| format!("job {j}"));
    match b.partition {
        Some(k) => format!("{job} · partition {k}"),
        None => job,
    }
}

fn tooltip(b: &Bar) -> String {
    let mut t = format!(
        "{} · {} · {} ({:.3}–{:.3} ms)",
        who(b),
        b.stage.label(),
        format_ms(b.duration_ms()),
        b.start_ms,
        b.end_ms
    );
    if b.total_lock_wait_ms() > 0.0 {
        let _ = write!(
            t,
            " · lock wait {} before, {} inside",
            format_ms(b.lock_wait_ms),
            format_ms(b.inner_lock_wait_ms)
        );
    }
    if b.open {
        t.push_str(" · never ended in the log");
    }
    t
}

fn phases(s: &mut String, w: &Waterfall, scale: &Scale) {
    if w.phases.is_empty() {
        return;
    }
    s.push_str("<g class=\"phases\">\n");
    for p in &w.phases {
        let y = lane_y(p.lane) + (LANE_H + BAR_H) / 2.0 - PHASE_H - 1.0;
        let x = scale.x(p.start_ms);
        let _ = writeln!(
            s,
            r#"<rect class="phase" x="{x:.2}" y="{y:.2}" width="{:.2}" height="{PHASE_H}" fill="{}"><title>job {} · partition {} · {} · {}</title></rect>"#,
            (scale.x(p.end_ms) - x).max(0.5),
            phase_fill(&p.name),
            p.job.map_or("?".into(), |j| j.to_string()),
            p.partition.map_or("?".into(), |k| k.to_string()),
            escape(&p.name),
            format_ms(p.end_ms - p.start_ms)
        );
    }
    s.push_str("</g>\n");
}

fn marks(s: &mut String, w: &Waterfall, scale: &Scale, top: f64) {
    s.push_str("<g class=\"marks\">\n");
    for m in &w.job_ends {
        let (class, colour, word) = match m.end {
            JobEnd::Done => ("mark done", "#2ca02c", "done"),
            JobEnd::Failed => ("mark failed", "#d62728", "failed"),
            JobEnd::Cancelled => ("mark cancelled", "#7f7f7f", "cancelled"),
        };
        let x = scale.x(m.t_ms);
        let _ = writeln!(
            s,
            r#"<rect class="{class}" x="{:.2}" y="{:.2}" width="2" height="{:.0}" fill="{colour}"><title>job {} {word} at {:.3} ms</title></rect>"#,
            x - 1.0,
            top + 2.0,
            MARK_H - 4.0,
            m.job.map_or("?".into(), |j| j.to_string()),
            m.t_ms
        );
    }
    s.push_str("</g>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(250.0, 8.0), 50.0);
        assert_eq!(tick_step(9.0, 8.0), 2.0);
        assert_eq!(tick_step(1.0e5, 8.0), 20000.0);
        assert_eq!(decimals(0.05), 2);
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
    }
}
