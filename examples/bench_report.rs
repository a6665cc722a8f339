//! Turns criterion's results into a report: medians, and ratios between variants measured in the
//! same `cargo bench` run, as JSON, a Markdown table and a PNG bar chart.
//!
//! ```text
//! cargo bench --bench resize_shapes --features flex      # and/or --bench training_step
//! cargo run --release --example bench_report              # writes target/bench-report/
//! cargo run --example bench_report -- --from-report docs/bench/report.json --output-dir D
//!                                                         # redraws a saved report's chart
//! ```
//!
//! Benchmark ids follow `BACKEND/CASE/PASS/VARIANT` (e.g. `flex/a_seg_logits/forward/native`).
//! Per `BACKEND/CASE/PASS` the baseline is the variant `native` (resize benches) or `plain`
//! (training step: `Autodiff<B>` without the decorator); each other variant gets
//! `variant / baseline`, and the decorator's variants also `gather / variant` (how many times
//! faster than the gather decomposition). The report prints when each row's numbers were
//! measured, so mixing runs is visible.

use burn_deterministic_suite::example_support::plot::{grouped_bars, BarGroup};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Measurement {
    variant: String,
    median_ms: f64,
    /// 95 % confidence interval of the median.
    ci_ms: [f64; 2],
    /// `median / baseline median` (same backend, case and pass).
    ratio_to_baseline: Option<f64>,
    /// `gather median / median`: how many times faster than the gather decomposition.
    speedup_over_gather: Option<f64>,
    /// Seconds since the Unix epoch when criterion wrote this result.
    measured_at: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Row {
    backend: String,
    case: String,
    pass: String,
    baseline: Option<String>,
    measurements: Vec<Measurement>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Report {
    machine: String,
    rows: Vec<Row>,
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn mtime(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

/// Every `*/new/benchmark.json` under `dir`, with its median estimate.
fn collect(dir: &Path, out: &mut Vec<(Vec<String>, f64, [f64; 2], u64)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let (bench, estimates) = (
            path.join("new/benchmark.json"),
            path.join("new/estimates.json"),
        );
        if let (Some(b), Some(e)) = (read_json(&bench), read_json(&estimates)) {
            let id: Vec<String> = b["full_id"]
                .as_str()
                .unwrap_or_default()
                .split('/')
                .map(str::to_string)
                .collect();
            let median = &e["median"];
            let ns = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN) / 1e6;
            if id.len() == 4 {
                out.push((
                    id,
                    ns(&median["point_estimate"]),
                    [
                        ns(&median["confidence_interval"]["lower_bound"]),
                        ns(&median["confidence_interval"]["upper_bound"]),
                    ],
                    mtime(&estimates),
                ));
            }
        } else {
            collect(&path, out);
        }
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores available")
}

fn build(results: Vec<(Vec<String>, f64, [f64; 2], u64)>) -> Vec<Row> {
    let mut grouped: BTreeMap<(String, String, String), Vec<Measurement>> = BTreeMap::new();
    for (id, median, ci, at) in results {
        grouped
            .entry((id[0].clone(), id[1].clone(), id[2].clone()))
            .or_default()
            .push(Measurement {
                variant: id[3].clone(),
                median_ms: median,
                ci_ms: ci,
                ratio_to_baseline: None,
                speedup_over_gather: None,
                measured_at: at,
            });
    }
    grouped
        .into_iter()
        .map(|((backend, case, pass), mut measurements)| {
            measurements.sort_by(|a, b| a.variant.cmp(&b.variant));
            let find = |name: &str| {
                measurements
                    .iter()
                    .find(|m| m.variant == name)
                    .map(|m| m.median_ms)
            };
            let baseline_name = ["native", "plain"]
                .into_iter()
                .find(|name| find(name).is_some());
            let baseline = baseline_name.and_then(find);
            let gather = find("gather");
            for m in measurements.iter_mut() {
                if Some(m.variant.as_str()) != baseline_name {
                    m.ratio_to_baseline = baseline.map(|b| m.median_ms / b);
                }
                if m.variant.starts_with("decorator") {
                    m.speedup_over_gather = gather.map(|g| g / m.median_ms);
                }
            }
            Row {
                backend,
                case,
                pass,
                baseline: baseline_name.map(str::to_string),
                measurements,
            }
        })
        .collect()
}

fn markdown(report: &Report) -> String {
    let times: Vec<u64> = report
        .rows
        .iter()
        .flat_map(|r| r.measurements.iter().map(|m| m.measured_at))
        .collect();
    let span_minutes = (times.iter().max().unwrap_or(&0) - times.iter().min().unwrap_or(&0)) / 60;
    let mut md = format!(
        "Machine: {}. All results were written within {span_minutes} minutes of each other.\n\nMedians in ms; `×base` = median / baseline median of the same run \
         (below 1 is faster); `gather/x` = how many times faster than the gather \
         decomposition.\n\n| backend | case | pass | variant | median ms | ×base | gather/x |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
        report.machine
    );
    for row in &report.rows {
        for m in &row.measurements {
            let opt =
                |v: Option<f64>, suffix: &str| v.map_or("".into(), |v| format!("{v:.2}{suffix}"));
            let variant = if Some(&m.variant) == row.baseline.as_ref() {
                format!("{} (baseline)", m.variant)
            } else {
                m.variant.clone()
            };
            md += &format!(
                "| {} | {} | {} | {} | {:.1} | {} | {} |\n",
                row.backend,
                row.case,
                row.pass,
                variant,
                m.median_ms,
                opt(m.ratio_to_baseline, "×"),
                opt(m.speedup_over_gather, "×"),
            );
        }
    }
    md
}

/// `ratios.png`: one group per backend, case and pass; one bar (and colour) per decorator
/// variant; the baseline at 1.
fn write_chart(report: &Report, out_dir: &Path) {
    let groups: Vec<BarGroup> = report
        .rows
        .iter()
        .map(|row| BarGroup {
            label: format!("{} {} {}", row.backend, row.case, row.pass),
            bars: row
                .measurements
                .iter()
                .filter(|m| m.variant.starts_with("decorator"))
                .filter_map(|m| m.ratio_to_baseline.map(|r| (m.variant.clone(), r)))
                .collect(),
        })
        .filter(|group| !group.bars.is_empty())
        .collect();
    grouped_bars(
        "Decorator time / baseline time (medians of the same run)",
        "time / baseline (lower is faster)",
        &groups,
        Some((1.0, "baseline")),
    )
    .expect("cannot draw ratios.png")
    .write_png(&out_dir.join("ratios.png"))
    .expect("cannot write ratios.png");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut criterion_dir = PathBuf::from("target/criterion");
    let mut out_dir = PathBuf::from("target/bench-report");
    let mut saved_report = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--criterion-dir" => criterion_dir = args.next().expect("a folder").into(),
            "--output-dir" => out_dir = args.next().expect("a folder").into(),
            "--from-report" => saved_report = Some(PathBuf::from(args.next().expect("a file"))),
            other => {
                eprintln!(
                    "usage: bench_report [--criterion-dir DIR | --from-report report.json] \
                     [--output-dir DIR] (got {other})"
                );
                std::process::exit(2);
            }
        }
    }
    if let Some(path) = saved_report {
        let report: Report = read_json(&path)
            .and_then(|json| serde_json::from_value(json).ok())
            .unwrap_or_else(|| panic!("{} is not a bench report", path.display()));
        std::fs::create_dir_all(&out_dir).expect("cannot create the output folder");
        write_chart(&report, &out_dir);
        println!("wrote {}/ratios.png", out_dir.display());
        return;
    }
    let mut results = Vec::new();
    collect(&criterion_dir, &mut results);
    if results.is_empty() {
        eprintln!(
            "error: no criterion results under {}: run `cargo bench --bench resize_shapes` first",
            criterion_dir.display()
        );
        std::process::exit(2);
    }
    let report = Report {
        machine: machine(),
        rows: build(results),
    };
    std::fs::create_dir_all(&out_dir).expect("cannot create the output folder");
    let json = serde_json::to_string_pretty(&report).expect("serialisable");
    std::fs::write(out_dir.join("report.json"), json).expect("cannot write report.json");
    let md = markdown(&report);
    std::fs::write(out_dir.join("report.md"), &md).expect("cannot write report.md");
    write_chart(&report, &out_dir);
    print!("{md}");
    println!(
        "\nwrote {}/report.json, report.md and ratios.png",
        out_dir.display()
    );
}
