//! A fleet: 2,000 requests a second over 10, 200 or 2,000 instances (or Zipf-skewed, or
//! autoscaling from 50 to 200), each instance with its own guards; a 30 s outage, a 60 s partial
//! failure, a 30 s overload or a 60 s zone fault, a minute in. Every guard and setting of
//! `reattempt_bench::sim::fleet::Guard::ALL`, each decision the runtime's own, on a paused tokio
//! clock, on the same seed.
//!
//! ```text
//! cargo run -p reattempt-bench --release --example fleet                  # every run; writes docs/fleet.csv and docs/fleet.svg
//! cargo run -p reattempt-bench --release --example fleet -- outage        # one fault (outage, partial, overload, zone); writes nothing
//! ```
//!
//! The model is `bench/src/sim/fleet.rs`; BENCHMARKS.md ("At fleet scale") and the guide's
//! chapter of the same name discuss the results.

use std::error::Error;
use std::fmt::Write as _;
use std::sync::Mutex;

use plotters::prelude::SeriesLabelPosition;
use reattempt_bench::sim::chart;
use reattempt_bench::sim::fleet::{Fault, Fleet, Guard, Scenario, Summary, simulate};

fn main() -> Result<(), Box<dyn Error>> {
    let only = std::env::args().nth(1);
    let faults: Vec<Fault> = Fault::ALL
        .into_iter()
        .filter(|f| only.as_deref().is_none_or(|o| f.label().starts_with(o)))
        .collect();
    if faults.is_empty() {
        return Err("expected no argument, or one of outage, partial, overload, zone".into());
    }
    let mut jobs = Vec::new();
    for fault in &faults {
        for fleet in Fleet::ALL {
            for guard in Guard::ALL {
                jobs.push((*fault, fleet, guard));
            }
        }
    }
    let started = std::time::Instant::now();
    let results: Mutex<Vec<Option<Summary>>> = Mutex::new(vec![None; jobs.len()]);
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Two workers, each its own paused runtime (the machine this is written on has two cores).
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .start_paused(true)
                    .build()
                    .expect("a runtime");
                loop {
                    let j = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(fault, fleet, guard)) = jobs.get(j) else {
                        break;
                    };
                    let summary =
                        runtime.block_on(simulate(&Scenario::standard(fleet, fault), guard));
                    results.lock().expect("no panic")[j] = Some(summary);
                }
            });
        }
    });
    let results = results.into_inner()?;
    let results: Vec<Summary> = results.into_iter().map(|r| r.expect("ran")).collect();
    let csv = report(&faults, &jobs, &results)?;
    println!("\n{} runs in {:.0?}", jobs.len(), started.elapsed());
    if only.is_none() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/fleet.csv");
        std::fs::write(&path, csv)?;
        let svg = path.with_extension("svg");
        plot(&svg, &jobs, &results)?;
        println!("wrote {} and {}", path.display(), svg.display());
    }
    Ok(())
}

/// Prints the tables (one per fault) and gives the CSV.
fn report(
    faults: &[Fault],
    jobs: &[(Fault, Fleet, Guard)],
    results: &[Summary],
) -> Result<String, Box<dyn Error>> {
    let mut csv =
        String::from("fault,fleet,guard,attempts_per_request,ok_during,ok_healthy,recovery_s\n");
    let recovery = |s: &Summary| {
        s.recovery
            .map_or_else(|| "> 120".to_owned(), |r| r.as_secs().to_string())
    };
    for fault in faults {
        println!(
            "\n## {} (attempts per request during it / recovery after it, s / ok during)\n",
            fault.label()
        );
        print!("| guard |");
        for fleet in Fleet::ALL {
            print!(" {} |", fleet.label());
        }
        println!("\n|---|{}", "---:|".repeat(Fleet::ALL.len()));
        for guard in Guard::ALL {
            print!("| {} |", guard.label());
            for fleet in Fleet::ALL {
                let j = jobs
                    .iter()
                    .position(|&(f, l, g)| f == *fault && l == fleet && g == guard)
                    .expect("ran");
                let s = results[j];
                if *fault == Fault::Zone {
                    print!(
                        " {:.2} / {} / {:.2} |",
                        s.attempts_per_request,
                        recovery(&s),
                        s.ok_healthy
                    );
                } else {
                    print!(
                        " {:.2} / {} / {:.2} |",
                        s.attempts_per_request,
                        recovery(&s),
                        s.ok_during
                    );
                }
                writeln!(
                    csv,
                    "{},{},{},{:.3},{:.3},{:.3},{}",
                    fault.label(),
                    fleet.label(),
                    guard.label(),
                    s.attempts_per_request,
                    s.ok_during,
                    s.ok_healthy,
                    s.recovery
                        .map_or_else(String::new, |r| r.as_secs().to_string())
                )?;
            }
            println!();
        }
    }
    Ok(csv)
}

/// Attempts per request during the outage against the number of instances (10, 200, 2,000, on a
/// log axis), for seven of the guards.
fn plot(
    path: &std::path::Path,
    jobs: &[(Fault, Fleet, Guard)],
    results: &[Summary],
) -> Result<(), Box<dyn Error>> {
    let guards = [
        Guard::None,
        Guard::AwsStandard,
        Guard::AwsFleet,
        Guard::Finagle,
        Guard::Ratio(0.0),
        Guard::ThrottleBook(120),
        Guard::ThrottleRatio,
    ];
    let series: Vec<chart::Series> = guards
        .into_iter()
        .zip(chart::PALETTE)
        .map(|(guard, color)| chart::Series {
            name: guard.label(),
            color,
            points: [10, 200, 2000]
                .into_iter()
                .map(|n| {
                    let j = jobs
                        .iter()
                        .position(|&(f, l, g)| {
                            f == Fault::Outage && l == Fleet::Uniform(n) && g == guard
                        })
                        .expect("ran");
                    (f64::from(n).log10(), results[j].attempts_per_request)
                })
                .collect(),
        })
        .collect();
    chart::draw(
        path,
        &chart::Chart {
            title: "Attempts per request during a 30 s outage (2,000 requests/s, guards per instance)",
            x_label: "instances (log10: 10, 200, 2,000)",
            y_label: "attempts per request",
            x_range: 0.9..3.4,
            y_range: 0.0..4.5,
            shade: None,
            reference: Some((1.3, "1.3")),
            legend_at: SeriesLabelPosition::UpperLeft,
            log_y: false,
        },
        &series,
    )
}
