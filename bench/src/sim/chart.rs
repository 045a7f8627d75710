//! Line charts for the simulators' SVG outputs (plotters, SVG backend, no font files needed: the
//! SVG carries its text as `<text>` elements).

use std::error::Error;
use std::ops::Range;
use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// One line of a chart.
pub struct Series {
    /// The legend's text.
    pub name: String,
    /// The line's colour.
    pub color: RGBColor,
    /// The points, in data coordinates.
    pub points: Vec<(f64, f64)>,
}

/// What the chart shows besides its lines.
pub struct Chart<'a> {
    /// The caption above the plot.
    pub title: &'a str,
    /// The x axis's description.
    pub x_label: &'a str,
    /// The y axis's description.
    pub y_label: &'a str,
    /// The x axis's range.
    pub x_range: Range<f64>,
    /// The y axis's range.
    pub y_range: Range<f64>,
    /// An x interval to shade, with its legend text (the outage, say).
    pub shade: Option<(Range<f64>, &'a str)>,
    /// A horizontal reference line at this y, with its legend text (the capacity, say).
    pub reference: Option<(f64, &'a str)>,
    /// Where the legend goes.
    pub legend_at: SeriesLabelPosition,
    /// A logarithmic y axis (its range must then start above zero).
    pub log_y: bool,
}

/// Colour-blind-safe colours (Okabe and Ito), one per series.
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(0, 0, 0),       // black
];

/// Draws `series` into an SVG file at `path` (900 × 540).
///
/// # Errors
/// When the file cannot be written.
pub fn draw(path: &Path, chart: &Chart<'_>, series: &[Series]) -> Result<(), Box<dyn Error>> {
    if chart.log_y {
        render(path, chart, series, chart.y_range.clone().log_scale())
    } else {
        render(path, chart, series, chart.y_range.clone())
    }
}

/// A tick label: no more decimals than the value needs. (By reference: plotters' formatter type.)
#[allow(clippy::trivially_copy_pass_by_ref)]
fn tick(v: &f64) -> String {
    let a = v.abs();
    if a >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn render<Y>(
    path: &Path,
    chart: &Chart<'_>,
    series: &[Series],
    y_spec: Y,
) -> Result<(), Box<dyn Error>>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut ctx = ChartBuilder::on(&root)
        .caption(chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(chart.x_range.clone(), y_spec)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    if let Some((xs, label)) = &chart.shade {
        let grey = RGBColor(200, 200, 200).mix(0.45);
        ctx.draw_series(std::iter::once(Rectangle::new(
            [(xs.start, chart.y_range.start), (xs.end, chart.y_range.end)],
            grey.filled(),
        )))?
        .label(*label)
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], grey.filled()));
    }
    if let Some((y, label)) = chart.reference {
        let style = BLACK.mix(0.6).stroke_width(1);
        ctx.draw_series(DashedLineSeries::new(
            [(chart.x_range.start, y), (chart.x_range.end, y)],
            6,
            4,
            style,
        ))?
        .label(label)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
    }
    for s in series {
        let style = s.color.stroke_width(2);
        ctx.draw_series(LineSeries::new(s.points.iter().copied(), style))?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
    }
    ctx.configure_series_labels()
        .position(chart.legend_at.clone())
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    root.present()?;
    Ok(())
}
