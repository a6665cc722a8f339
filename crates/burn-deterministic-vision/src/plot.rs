//! PNG charts for the examples (training curves) and the bench report (ratios), drawn with
//! plotters' bitmap backend. Text is DejaVu Sans, embedded through the `dejavu` crate, so no
//! system font is needed. Each series or variant keeps one colour across panels, and the
//! legend sits in the header, clear of the data.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;
use std::sync::Once;

/// Series colours, colour-blind friendly (Okabe–Ito: blue, orange, green, purple, red).
pub const PALETTE: [RGBColor; 5] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(213, 94, 0),
];

const FONT: &str = "sans-serif";
const HEADER_HEIGHT: u32 = 64;

/// A chart that could not be drawn (plotters' error, as text).
#[derive(Debug)]
pub struct PlotError(String);

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot draw the chart: {}", self.0)
    }
}

impl std::error::Error for PlotError {}

impl From<PlotError> for std::io::Error {
    fn from(error: PlotError) -> Self {
        std::io::Error::other(error)
    }
}

fn plot_error(error: impl std::fmt::Display) -> PlotError {
    PlotError(error.to_string())
}

/// Registers DejaVu Sans as plotters' sans-serif family (once per process).
fn register_fonts() {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        for (style, bytes) in [
            (FontStyle::Normal, dejavu::sans::regular()),
            (FontStyle::Bold, dejavu::sans::bold()),
        ] {
            plotters::style::register_font(FONT, style, bytes)
                .unwrap_or_else(|_| panic!("the embedded DejaVu Sans font is invalid"));
        }
    });
}

/// A drawn chart: RGB pixels, row-major.
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl Image {
    fn blank(width: u32, height: u32) -> Self {
        Image {
            width,
            height,
            rgb: vec![255; (width * height * 3) as usize],
        }
    }

    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = ((y * self.width + x) * 3) as usize;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Whether any pixel in the rectangle `[x0, x1) × [y0, y1)` has exactly this colour.
    pub fn contains_colour(
        &self,
        colour: RGBColor,
        (x0, y0, x1, y1): (u32, u32, u32, u32),
    ) -> bool {
        (y0..y1.min(self.height))
            .flat_map(|y| (x0..x1.min(self.width)).map(move |x| (x, y)))
            .any(|(x, y)| self.pixel(x, y) == [colour.0, colour.1, colour.2])
    }

    pub fn write_png(&self, path: &Path) -> std::io::Result<()> {
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let mut encoder = png::Encoder::new(file, self.width, self.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
        writer
            .write_image_data(&self.rgb)
            .map_err(std::io::Error::other)
    }
}

/// One named series of `(x, y)` points; non-finite points are left out.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One line chart of a figure.
pub struct Panel {
    pub title: String,
    pub series: Vec<Series>,
}

/// Names in order of first appearance: the colour of a name is its index here.
fn names_in_order<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = Vec::new();
    for name in names {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen
}

fn colour_of(names: &[&str], name: &str) -> RGBColor {
    let index = names.iter().position(|n| *n == name).unwrap_or(0);
    PALETTE[index % PALETTE.len()]
}

/// The title on the left and a legend entry per name on the right of the header band.
fn draw_header<DB: DrawingBackend>(
    header: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    names: &[&str],
    line_markers: bool,
) -> Result<(), PlotError> {
    let (width, _) = header.dim_in_pixel();
    header
        .draw_text(
            title,
            &(FONT, 24).into_font().style(FontStyle::Bold).color(&BLACK),
            (16, 14),
        )
        .map_err(plot_error)?;
    let label = (FONT, 16).into_font().color(&BLACK);
    let entry_width = |name: &str| 40 + 9 * name.chars().count() as i32;
    let total: i32 = names.iter().map(|n| entry_width(n)).sum();
    let mut x = width as i32 - 16 - total;
    let y = 48;
    for name in names {
        let colour = colour_of(names, name);
        if line_markers {
            header
                .draw(&PathElement::new(
                    vec![(x, y), (x + 26, y)],
                    colour.stroke_width(3),
                ))
                .map_err(plot_error)?;
            header
                .draw(&Circle::new((x + 13, y), 4, colour.filled()))
                .map_err(plot_error)?;
        } else {
            header
                .draw(&Rectangle::new(
                    [(x + 4, y - 7), (x + 22, y + 7)],
                    colour.filled(),
                ))
                .map_err(plot_error)?;
        }
        header
            .draw_text(
                name,
                &label.pos(Pos::new(HPos::Left, VPos::Center)),
                (x + 32, y),
            )
            .map_err(plot_error)?;
        x += entry_width(name);
    }
    Ok(())
}

fn finite_range(values: impl Iterator<Item = f64> + Clone) -> Option<(f64, f64)> {
    let finite = values.filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    lo.is_finite().then_some((lo, hi))
}

/// A value as a short label: integers without decimals, otherwise up to three significant
/// digits.
pub fn format_value(v: f64) -> String {
    if (v == v.round() && v.abs() < 1e6) || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.01 {
        let text = format!("{v:.3}");
        text.trim_end_matches('0').to_string()
    } else {
        format!("{v:.1e}")
    }
}

/// A figure of line charts, `columns` per row, sharing one legend (the series names) in the
/// header. Each panel's axes fit its finite points; a panel without any says so.
pub fn line_panels(
    title: &str,
    x_label: &str,
    panels: &[Panel],
    columns: usize,
) -> Result<Image, PlotError> {
    register_fonts();
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    let (panel_width, panel_height) = (480u32, 320u32);
    let mut image = Image::blank(
        panel_width * columns as u32,
        HEADER_HEIGHT + panel_height * rows as u32,
    );
    let names = names_in_order(
        panels
            .iter()
            .flat_map(|p| p.series.iter().map(|s| s.name.as_str())),
    );
    {
        let root = BitMapBackend::with_buffer(&mut image.rgb, (image.width, image.height))
            .into_drawing_area();
        let (header, body) = root.split_vertically(HEADER_HEIGHT);
        draw_header(&header, title, &names, true)?;
        for (panel, area) in panels.iter().zip(body.split_evenly((rows, columns))) {
            draw_line_panel(&area, panel, x_label, &names)?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(image)
}

fn draw_line_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    x_label: &str,
    names: &[&str],
) -> Result<(), PlotError> {
    let points = || panel.series.iter().flat_map(|s| s.points.iter().copied());
    let (Some((x0, x1)), Some((y0, y1))) = (
        finite_range(points().filter(|p| p.1.is_finite()).map(|p| p.0)),
        finite_range(points().filter(|p| p.0.is_finite()).map(|p| p.1)),
    ) else {
        area.titled(&panel.title, (FONT, 18)).map_err(plot_error)?;
        return area
            .draw_text("no data", &(FONT, 16).into_font().color(&BLACK), (60, 60))
            .map_err(plot_error);
    };
    let pad = |lo: f64, hi: f64, fraction: f64| {
        let span = if hi > lo { hi - lo } else { lo.abs().max(1.0) };
        (lo - fraction * span, hi + fraction * span)
    };
    let (x0, x1) = pad(x0, x1, 0.03);
    let (y0, y1) = pad(y0, y1, 0.08);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 18))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(58)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(plot_error)?;
    let whole_x = x1 - x0 <= 40.0;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .x_labels(if whole_x {
            (x1 - x0).ceil() as usize + 1
        } else {
            8
        })
        .x_label_formatter(&|v| {
            if v.fract() == 0.0 {
                format_value(*v)
            } else {
                String::new()
            }
        })
        .y_labels(6)
        .y_label_formatter(&|v| format_value(*v))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(plot_error)?;
    for series in &panel.series {
        let colour = colour_of(names, &series.name);
        let finite: Vec<(f64, f64)> = series
            .points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        chart
            .draw_series(LineSeries::new(finite.clone(), colour.stroke_width(2)))
            .map_err(plot_error)?;
        chart
            .draw_series(PointSeries::of_element(
                finite,
                4,
                colour.filled(),
                &|c, s, st| EmptyElement::at(c) + Circle::new((0, 0), s, st),
            ))
            .map_err(plot_error)?;
    }
    Ok(())
}

/// One group of bars: a label and `(variant, value)` pairs.
pub struct BarGroup {
    pub label: String,
    pub bars: Vec<(String, f64)>,
}

/// Horizontal bars grouped by label, one colour per variant (legend in the header), the value
/// printed at each bar's end, and an optional dashed reference line `(value, its name)`.
pub fn grouped_bars(
    title: &str,
    value_label: &str,
    groups: &[BarGroup],
    reference: Option<(f64, &str)>,
) -> Result<Image, PlotError> {
    register_fonts();
    let variants = names_in_order(
        groups
            .iter()
            .flat_map(|g| g.bars.iter().map(|(v, _)| v.as_str())),
    );
    // Each group stacks its own bars around its centre; the group height fits the largest.
    let slots = groups
        .iter()
        .map(|g| g.bars.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let bar_pixels = 16u32;
    let group_pixels = bar_pixels * slots as u32 + 14;
    let label_width = groups
        .iter()
        .map(|g| g.label.chars().count() as u32 * 8 + 24)
        .max()
        .unwrap_or(0)
        .max(60);
    let mut image = Image::blank(
        label_width + 620,
        HEADER_HEIGHT + 70 + group_pixels * groups.len().max(1) as u32,
    );
    let max = groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.1))
        .chain(reference.map(|r| r.0))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    {
        let root = BitMapBackend::with_buffer(&mut image.rgb, (image.width, image.height))
            .into_drawing_area();
        let (header, body) = root.split_vertically(HEADER_HEIGHT);
        draw_header(&header, title, &variants, false)?;
        let n = groups.len().max(1) as f64;
        // Group i is centred at y = n - 1 - i, so the first group is at the top.
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(label_width)
            .build_cartesian_2d(0.0..max * 1.18, -0.5..n - 0.5)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc(value_label)
            .x_labels(8)
            .x_label_formatter(&|v| format_value(*v))
            // The group labels are drawn below, centred on their groups.
            .y_labels(0)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .disable_y_mesh()
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(225, 225, 225))
            .draw()
            .map_err(plot_error)?;
        let group_label = (FONT, 13)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (i, group) in groups.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(0.0, n - 1.0 - i as f64));
            root.draw_text(&group.label, &group_label, (x - 8, y))
                .map_err(plot_error)?;
        }
        let slot_height = 0.8 / slots as f64;
        let value_style = (FONT, 12)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (i, group) in groups.iter().enumerate() {
            let top = n - 1.0 - i as f64 + slot_height * group.bars.len() as f64 / 2.0;
            for (slot, (variant, value)) in group.bars.iter().enumerate() {
                let (y_top, y_bottom) = (
                    top - slot as f64 * slot_height,
                    top - (slot + 1) as f64 * slot_height + 0.02,
                );
                let length = if value.is_finite() { *value } else { 0.0 };
                chart
                    .draw_series([Rectangle::new(
                        [(0.0, y_top), (length, y_bottom)],
                        colour_of(&variants, variant).filled(),
                    )])
                    .map_err(plot_error)?;
                chart
                    .draw_series([Text::new(
                        format!("{value:.2}×"),
                        (length + max * 0.01, (y_top + y_bottom) / 2.0),
                        value_style.clone(),
                    )])
                    .map_err(plot_error)?;
            }
        }
        if let Some((value, name)) = reference {
            chart
                .draw_series(DashedLineSeries::new(
                    [(value, -0.5), (value, n - 0.5)],
                    6,
                    4,
                    BLACK.stroke_width(1),
                ))
                .map_err(plot_error)?;
            // Above the plotting area, at the line (backend coordinates: drawn on `root`).
            let (x, y) = chart.backend_coord(&(value, n - 0.5));
            let style = (FONT, 13)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            root.draw_text(name, &style, (x, y - 2))
                .map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(title: &str, train: Vec<(f64, f64)>, valid: Vec<(f64, f64)>) -> Panel {
        Panel {
            title: title.into(),
            series: vec![
                Series {
                    name: "train".into(),
                    points: train,
                },
                Series {
                    name: "valid".into(),
                    points: valid,
                },
            ],
        }
    }

    #[test]
    fn every_panel_draws_both_series_and_the_legend_stays_in_the_header() {
        let rising: Vec<(f64, f64)> = (1..=10).map(|e| (e as f64, e as f64 * 0.1)).collect();
        let falling: Vec<(f64, f64)> = (1..=10).map(|e| (e as f64, 1.0 / e as f64)).collect();
        let image = line_panels(
            "Segmentation on flex",
            "epoch",
            &[
                panel(
                    "loss",
                    falling.clone(),
                    falling.iter().map(|(x, y)| (*x, y + 0.3)).collect(),
                ),
                panel("mIoU %", rising.clone(), vec![(1.0, f64::NAN), (2.0, 0.3)]),
                panel("empty", vec![], vec![]),
            ],
            2,
        )
        .unwrap();
        assert_eq!((image.width, image.height), (960, HEADER_HEIGHT + 2 * 320));
        let (train, valid) = (PALETTE[0], PALETTE[1]);
        // The legend: both colours in the header band.
        let header = (0, 0, image.width, HEADER_HEIGHT);
        assert!(image.contains_colour(train, header) && image.contains_colour(valid, header));
        // Each data panel holds both series' colours; the empty one neither.
        let panel_at = |column: u32, row: u32| {
            let (x0, y0) = (column * 480, HEADER_HEIGHT + row * 320);
            (x0, y0, x0 + 480, y0 + 320)
        };
        for rect in [panel_at(0, 0), panel_at(1, 0)] {
            assert!(image.contains_colour(train, rect), "{rect:?}");
            assert!(image.contains_colour(valid, rect), "{rect:?}");
        }
        assert!(!image.contains_colour(train, panel_at(0, 1)));
        // Text is drawn (anti-aliased dark pixels) in the title's place.
        let dark = (8..40)
            .flat_map(|y| (16..200).map(move |x| (x, y)))
            .filter(|&(x, y)| image.pixel(x, y).iter().all(|c| *c < 100))
            .count();
        assert!(dark > 100, "{dark} dark pixels in the title");
    }

    #[test]
    fn grouped_bars_colour_each_variant_and_scale_to_the_largest_value() {
        let groups = vec![
            BarGroup {
                label: "flex (a) forward".into(),
                bars: vec![("banded".into(), 0.5), ("dense".into(), 1.5)],
            },
            BarGroup {
                label: "ndarray (a) forward".into(),
                bars: vec![("dense".into(), 0.25)],
            },
        ];
        let image = grouped_bars(
            "ratios",
            "time / baseline",
            &groups,
            Some((1.0, "baseline")),
        )
        .unwrap();
        let body = (0, HEADER_HEIGHT, image.width, image.height);
        assert!(image.contains_colour(PALETTE[0], body));
        assert!(image.contains_colour(PALETTE[1], body));
        // Bars start at zero and scale with their value: the longest (dense, 1.5) is three
        // times the banded one (0.5), within a pixel or two.
        let extent = |colour: RGBColor| {
            let xs: Vec<u32> = (HEADER_HEIGHT..image.height)
                .flat_map(|y| (0..image.width).map(move |x| (x, y)))
                .filter(|&(x, y)| image.pixel(x, y) == [colour.0, colour.1, colour.2])
                .map(|(x, _)| x)
                .collect();
            (*xs.iter().min().unwrap(), *xs.iter().max().unwrap())
        };
        let (banded, dense) = (extent(PALETTE[0]), extent(PALETTE[1]));
        assert_eq!(banded.0, dense.0, "bars start at zero");
        let ratio = f64::from(dense.1 - dense.0) / f64::from(banded.1 - banded.0);
        assert!((ratio - 3.0).abs() < 0.05, "dense / banded length {ratio}");
    }

    #[test]
    fn png_round_trips() {
        let image = line_panels(
            "t",
            "x",
            &[panel("p", vec![(0.0, 1.0), (1.0, 2.0)], vec![])],
            1,
        )
        .unwrap();
        let path = std::env::temp_dir().join(format!("plot-test-{}.png", std::process::id()));
        image.write_png(&path).unwrap();
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (image.width, image.height));
        assert_eq!(&buf[..image.rgb.len()], &image.rgb[..]);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn format_value_is_compact() {
        assert_eq!(format_value(1234.0), "1234");
        assert_eq!(format_value(12.34), "12.3");
        assert_eq!(format_value(0.5), "0.5");
        assert_eq!(format_value(0.6198), "0.62");
        assert_eq!(format_value(8.0), "8");
        assert_eq!(format_value(0.0001), "1.0e-4");
    }
}
