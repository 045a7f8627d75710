//! Marc Brooker's contention simulation ("Exponential Backoff And Jitter", AWS Architecture Blog,
//! 2015), driven by the runtime's own `RetryPolicy::delays_seeded`: how many writes, and how much
//! time, N clients need to each update one optimistically-locked row once.
//!
//! ```text
//! cargo run -p reattempt-bench --release --example contention            # 100 runs per cell, writes docs/contention*
//! cargo run -p reattempt-bench --example contention -- --runs 5 --step 30 # a quick sweep; writes nothing
//! cargo run -p reattempt-bench --example contention -- --runs 5 --out /tmp/c
//! ```
//!
//! The model is `reattempt_bench::sim::occ` (`bench/src/sim/occ.rs`); BENCHMARKS.md compares
//! the results with the published simulator's.

use std::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use plotters::prelude::SeriesLabelPosition;
use reattempt::Jitter;
use reattempt_bench::sim::{chart, occ};

const KINDS: [Jitter; 4] = [
    Jitter::None,
    Jitter::Full,
    Jitter::Equal,
    Jitter::Decorrelated,
];

/// Means of the published simulator (re-run, 100 runs per cell): clients, kind, calls, time in s.
const PUBLISHED: [(u32, Jitter, f64, Option<f64>); 12] = [
    (50, Jitter::None, 625.0, None),
    (50, Jitter::Full, 333.0, None),
    (50, Jitter::Equal, 347.0, None),
    (50, Jitter::Decorrelated, 372.0, None),
    (100, Jitter::None, 1852.0, Some(63.0)),
    (100, Jitter::Full, 795.0, Some(4.9)),
    (100, Jitter::Equal, 812.0, Some(6.6)),
    (100, Jitter::Decorrelated, 998.0, Some(4.5)),
    (190, Jitter::None, 5159.0, None),
    (190, Jitter::Full, 1772.0, None),
    (190, Jitter::Equal, 1759.0, None),
    (190, Jitter::Decorrelated, 2438.0, None),
];

struct Args {
    runs: u32,
    step: u32,
    max_clients: u32,
    seed: u64,
    out: Option<PathBuf>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args {
        runs: 100,
        step: 10,
        max_clients: 190,
        seed: 2015,
        out: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--runs" => args.runs = value()?.parse()?,
            "--step" => args.step = value()?.parse()?,
            "--max-clients" => args.max_clients = value()?.parse()?,
            "--seed" => args.seed = value()?.parse()?,
            "--out" => args.out = Some(value()?.into()),
            other => {
                return Err(format!(
                    "unknown argument `{other}`; expected --runs N, --step N, --max-clients N, --seed N, --out DIR"
                )
                .into());
            }
        }
    }
    if args.runs == 0 || args.step == 0 {
        return Err("--runs and --step must be at least 1".into());
    }
    let full = args.runs == 100 && args.step == 10 && args.max_clients == 190 && args.seed == 2015;
    if args.out.is_none() && full {
        args.out = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs"));
    }
    Ok(args)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let started = Instant::now();
    let mut cells = Vec::new();
    let clients: Vec<u32> = (args.step..=args.max_clients)
        .step_by(args.step as usize)
        .collect();
    for &n in &clients {
        for jitter in KINDS {
            cells.push(occ::cell(n, jitter, args.runs, args.seed));
        }
    }
    let elapsed = started.elapsed();

    print_comparison(&cells);
    println!(
        "\n{} cells × {} runs in {:.1} s (hops |N({}, {}) ms|, base 5 ms, cap 2 s, seed {})",
        cells.len(),
        args.runs,
        elapsed.as_secs_f64(),
        occ::HOP_MEAN_MS,
        occ::HOP_SD_MS,
        args.seed
    );

    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)?;
        write_csv(&out.join("contention.csv"), &cells)?;
        plot(out, &cells)?;
        println!(
            "wrote {}/contention.csv, contention_calls.svg, contention_time.svg",
            out.display()
        );
    } else {
        println!("(not the full sweep: no files written; pass --out DIR to write them)");
    }
    Ok(())
}

fn print_comparison(cells: &[occ::Cell]) {
    println!(
        "{:>7}  {:<12} {:>15} {:>10} {:>7}   {:>13} {:>10} {:>7}",
        "clients", "jitter", "calls (ours)", "published", "Δ", "time (ours)", "published", "Δ"
    );
    for c in cells {
        let published = PUBLISHED
            .iter()
            .find(|p| p.0 == c.clients && p.1 == c.jitter);
        let Some(&(_, _, pub_calls, time)) = published else {
            continue;
        };
        let time_s = c.time_ms / 1e3;
        let (pub_time, time_delta) = match time {
            Some(t) => (format!("{t:.1} s"), pct(time_s, t)),
            None => ("–".to_owned(), String::new()),
        };
        println!(
            "{:>7}  {:<12} {:>8.0} ± {:>4.0} {:>10.0} {:>7}   {:>11.1} s {:>10} {:>7}",
            c.clients,
            c.jitter.to_string(),
            c.calls,
            c.calls_sd,
            pub_calls,
            pct(c.calls, pub_calls),
            time_s,
            pub_time,
            time_delta
        );
    }
}

fn pct(ours: f64, published: f64) -> String {
    format!("{:+.1}%", (ours / published - 1.0) * 100.0)
}

fn write_csv(path: &std::path::Path, cells: &[occ::Cell]) -> Result<(), Box<dyn Error>> {
    let mut csv = String::from("clients,jitter,runs,calls_mean,calls_sd,time_ms_mean,time_ms_sd\n");
    for c in cells {
        writeln!(
            csv,
            "{},{},{},{:.1},{:.1},{:.1},{:.1}",
            c.clients, c.jitter, c.runs, c.calls, c.calls_sd, c.time_ms, c.time_ms_sd
        )?;
    }
    std::fs::write(path, csv)?;
    Ok(())
}

fn plot(out: &std::path::Path, cells: &[occ::Cell]) -> Result<(), Box<dyn Error>> {
    let series = |value: fn(&occ::Cell) -> f64| -> Vec<chart::Series> {
        KINDS
            .iter()
            .zip(chart::PALETTE)
            .map(|(&jitter, color)| chart::Series {
                name: match jitter {
                    Jitter::None => "no jitter (exponential)".to_owned(),
                    other => format!("{other} jitter"),
                },
                color,
                points: cells
                    .iter()
                    .filter(|c| c.jitter == jitter)
                    .map(|c| (f64::from(c.clients), value(c)))
                    .collect(),
            })
            .collect()
    };
    let x_max = cells
        .iter()
        .map(|c| f64::from(c.clients))
        .fold(0.0, f64::max);
    let work = series(|c| c.calls);
    let times = series(|c| c.time_ms / 1e3);
    let top = |s: &[chart::Series]| {
        s.iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0, f64::max)
            * 1.05
    };
    let bottom = |s: &[chart::Series]| {
        s.iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(f64::INFINITY, f64::min)
            * 0.8
    };
    chart::draw(
        &out.join("contention_calls.svg"),
        &chart::Chart {
            title: "Work: writes until every client has written once (mean of runs)",
            x_label: "clients",
            y_label: "calls (writes made, failed ones included)",
            x_range: 0.0..x_max + 5.0,
            y_range: 0.0..top(&work),
            shade: None,
            reference: None,
            legend_at: SeriesLabelPosition::UpperLeft,
            log_y: false,
        },
        &work,
    )?;
    chart::draw(
        &out.join("contention_time.svg"),
        &chart::Chart {
            title: "Time until every client has written once (mean of runs; log scale)",
            x_label: "clients",
            y_label: "time of the last write (s)",
            x_range: 0.0..x_max + 5.0,
            y_range: bottom(&times)..top(&times) * 1.5,
            shade: None,
            reference: None,
            legend_at: SeriesLabelPosition::LowerRight,
            log_y: true,
        },
        &times,
    )?;
    Ok(())
}
