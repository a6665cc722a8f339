//! Small PNG charts (training curves, benchmark bars) drawn on an RGB canvas with a built-in
//! 5×7 bitmap font, so that examples and the bench report need neither a font file nor a
//! plotting stack with system dependencies.

use std::path::Path;

type Rgb = [u8; 3];

pub const WHITE: Rgb = [255, 255, 255];
pub const BLACK: Rgb = [0, 0, 0];
pub const GREY: Rgb = [200, 200, 200];
/// Series colours (colour-blind friendly: blue, orange, green, purple, red).
pub const PALETTE: [Rgb; 5] = [
    [0, 114, 178],
    [230, 159, 0],
    [0, 158, 115],
    [204, 121, 167],
    [213, 94, 0],
];

/// 5×7 glyphs, one byte per row, bit 4 = leftmost column. Lowercase letters draw as uppercase.
fn glyph(c: char) -> [u8; 7] {
    match c.to_ascii_uppercase() {
        '0' => [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        '1' => [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        '2' => [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        '3' => [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        '4' => [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        '5' => [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        '6' => [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        '7' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        '9' => [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        'A' => [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'B' => [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        'C' => [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
        'D' => [0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C],
        'E' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        'F' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        'G' => [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        'H' => [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'I' => [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        'J' => [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        'K' => [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        'L' => [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        'M' => [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        'N' => [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        'O' => [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'P' => [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        'Q' => [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
        'R' => [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        'S' => [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
        'T' => [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        'U' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'V' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        'W' => [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
        'X' => [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        'Y' => [0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04],
        'Z' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        '.' => [0, 0, 0, 0, 0, 0x0C, 0x0C],
        ',' => [0, 0, 0, 0, 0x0C, 0x04, 0x08],
        '-' => [0, 0, 0, 0x1F, 0, 0, 0],
        '+' => [0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0],
        '=' => [0, 0, 0x1F, 0, 0x1F, 0, 0],
        ':' => [0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0],
        '%' => [0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03],
        '/' => [0, 0x01, 0x02, 0x04, 0x08, 0x10, 0],
        '(' => [0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02],
        ')' => [0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08],
        '[' => [0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E],
        ']' => [0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E],
        '_' => [0, 0, 0, 0, 0, 0, 0x1F],
        '<' => [0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02],
        '>' => [0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08],
        ' ' => [0; 7],
        _ => [0x1F, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1F], // unknown: a box
    }
}

/// An RGB image to draw on.
pub struct Canvas {
    pub width: usize,
    pub height: usize,
    pixels: Vec<u8>,
}

impl Canvas {
    pub fn new(width: usize, height: usize) -> Self {
        Self {
            width,
            height,
            pixels: WHITE.repeat(width * height),
        }
    }

    pub fn pixel(&self, x: usize, y: usize) -> Rgb {
        let i = 3 * (y * self.width + x);
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }

    pub fn set(&mut self, x: i64, y: i64, colour: Rgb) {
        if x >= 0 && y >= 0 && (x as usize) < self.width && (y as usize) < self.height {
            let i = 3 * (y as usize * self.width + x as usize);
            self.pixels[i..i + 3].copy_from_slice(&colour);
        }
    }

    pub fn fill_rect(&mut self, x: i64, y: i64, w: i64, h: i64, colour: Rgb) {
        for yy in y..y + h {
            for xx in x..x + w {
                self.set(xx, yy, colour);
            }
        }
    }

    /// A line `thickness` pixels wide (Bresenham, with a square brush).
    pub fn line(&mut self, from: (i64, i64), to: (i64, i64), colour: Rgb, thickness: i64) {
        let (mut x, mut y) = from;
        let (dx, dy) = ((to.0 - x).abs(), -(to.1 - y).abs());
        let (sx, sy) = (if x < to.0 { 1 } else { -1 }, if y < to.1 { 1 } else { -1 });
        let mut err = dx + dy;
        let half = thickness / 2;
        loop {
            self.fill_rect(x - half, y - half, thickness, thickness, colour);
            if (x, y) == to {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// Text with its top-left corner at `(x, y)`, each font pixel `scale`² screen pixels.
    pub fn text(&mut self, x: i64, y: i64, text: &str, colour: Rgb, scale: i64) {
        for (i, c) in text.chars().enumerate() {
            let rows = glyph(c);
            let left = x + i as i64 * 6 * scale;
            for (row, bits) in rows.iter().enumerate() {
                for col in 0..5 {
                    if bits & (0x10 >> col) != 0 {
                        self.fill_rect(
                            left + col * scale,
                            y + row as i64 * scale,
                            scale,
                            scale,
                            colour,
                        );
                    }
                }
            }
        }
    }

    pub fn text_width(text: &str, scale: i64) -> i64 {
        text.chars().count() as i64 * 6 * scale
    }

    pub fn write_png(&self, path: &Path) -> std::io::Result<()> {
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let mut encoder = png::Encoder::new(file, self.width as u32, self.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
        writer
            .write_image_data(&self.pixels)
            .map_err(std::io::Error::other)
    }
}

/// Compact number for axis labels.
pub fn format_value(v: f64) -> String {
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e5 {
        format!("{v:.0}")
    } else if a != 0.0 && !(0.01..10000.0).contains(&a) {
        format!("{v:.1e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// One named series of `(x, y)` points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Draws one line-chart panel (title, y range labels, x range labels, a legend) into the
/// rectangle `(x, y, w, h)` of `canvas`.
pub fn line_panel(
    canvas: &mut Canvas,
    (x, y, w, h): (i64, i64, i64, i64),
    title: &str,
    series: &[Series],
) {
    let (left, top, right, bottom) = (x + 70, y + 30, x + w - 15, y + h - 30);
    canvas.text(x + 10, y + 8, title, BLACK, 2);
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|(a, b)| a.is_finite() && b.is_finite())
        .collect();
    canvas.line((left, top), (left, bottom), BLACK, 1);
    canvas.line((left, bottom), (right, bottom), BLACK, 1);
    if all.is_empty() {
        canvas.text(left + 10, top + 10, "no data", BLACK, 1);
        return;
    }
    let bounds = |f: fn(&(f64, f64)) -> f64| {
        let lo = all.iter().map(f).fold(f64::INFINITY, f64::min);
        let hi = all.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
        if hi > lo {
            (lo, hi)
        } else {
            (lo - 0.5, hi + 0.5)
        }
    };
    let ((x0, x1), (y0, y1)) = (bounds(|p| p.0), bounds(|p| p.1));
    let to_screen = |(px, py): (f64, f64)| {
        (
            left + ((px - x0) / (x1 - x0) * (right - left) as f64).round() as i64,
            bottom - ((py - y0) / (y1 - y0) * (bottom - top) as f64).round() as i64,
        )
    };
    for frac in [0.25, 0.5, 0.75, 1.0] {
        let gy = bottom - (frac * (bottom - top) as f64) as i64;
        canvas.line((left + 1, gy), (right, gy), GREY, 1);
    }
    for (value, gy) in [(y1, top), (y0, bottom - 7)] {
        let label = format_value(value);
        canvas.text(
            left - 6 - Canvas::text_width(&label, 1),
            gy,
            &label,
            BLACK,
            1,
        );
    }
    canvas.text(left, bottom + 6, &format_value(x0), BLACK, 1);
    let last = format_value(x1);
    canvas.text(
        right - Canvas::text_width(&last, 1),
        bottom + 6,
        &last,
        BLACK,
        1,
    );
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let points: Vec<(i64, i64)> = s
            .points
            .iter()
            .copied()
            .filter(|(a, b)| a.is_finite() && b.is_finite())
            .map(to_screen)
            .collect();
        for pair in points.windows(2) {
            canvas.line(pair[0], pair[1], colour, 2);
        }
        for &(px, py) in &points {
            canvas.fill_rect(px - 3, py - 3, 7, 7, colour);
        }
        let ly = top + 4 + 12 * i as i64;
        canvas.fill_rect(right - 90, ly, 10, 7, colour);
        canvas.text(right - 76, ly, &s.name, BLACK, 1);
    }
}

/// A horizontal bar chart: one bar per `(label, value)`, scaled to the largest value, with the
/// value printed at the bar's end. `reference` draws a dashed vertical line (e.g. ratio 1.0).
pub fn bar_chart(title: &str, bars: &[(String, f64)], reference: Option<f64>) -> Canvas {
    let label_width = bars
        .iter()
        .map(|(l, _)| Canvas::text_width(l, 1))
        .max()
        .unwrap_or(0)
        + 20;
    let (width, row) = (label_width as usize + 520, 18i64);
    let height = 50 + bars.len() * row as usize + 20;
    let mut canvas = Canvas::new(width, height);
    canvas.text(10, 10, title, BLACK, 2);
    let max = bars
        .iter()
        .map(|b| b.1)
        .chain(reference)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let span = 400.0;
    for (i, (label, value)) in bars.iter().enumerate() {
        let y = 45 + i as i64 * row;
        canvas.text(10, y + 3, label, BLACK, 1);
        let len = if value.is_finite() {
            (value / max * span).round() as i64
        } else {
            0
        };
        canvas.fill_rect(
            label_width,
            y,
            len.max(1),
            row - 5,
            PALETTE[i % PALETTE.len()],
        );
        canvas.text(
            label_width + len + 5,
            y + 3,
            &format_value(*value),
            BLACK,
            1,
        );
    }
    if let Some(r) = reference {
        let x = label_width + (r / max * span).round() as i64;
        let (y0, y1) = (40, 45 + bars.len() as i64 * row);
        let mut y = y0;
        while y < y1 {
            canvas.line((x, y), (x, (y + 4).min(y1)), BLACK, 1);
            y += 8;
        }
    }
    canvas
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_sets_exactly_the_glyph_pixels() {
        let mut canvas = Canvas::new(20, 10);
        canvas.text(0, 0, "1", BLACK, 1);
        let set: usize = (0..10)
            .flat_map(|y| (0..20).map(move |x| (x, y)))
            .filter(|&(x, y)| canvas.pixel(x, y) == BLACK)
            .count();
        let expected: u32 = glyph('1').iter().map(|r| r.count_ones()).sum();
        assert_eq!(set, expected as usize);
        assert_eq!(canvas.pixel(2, 0), BLACK); // top of the stem
        assert_eq!(canvas.pixel(0, 0), WHITE);
    }

    #[test]
    fn line_reaches_both_ends_and_png_round_trips() {
        let mut canvas = Canvas::new(16, 8);
        canvas.line((1, 1), (14, 6), PALETTE[0], 1);
        assert_eq!(canvas.pixel(1, 1), PALETTE[0]);
        assert_eq!(canvas.pixel(14, 6), PALETTE[0]);
        let path = std::env::temp_dir().join(format!("plot-test-{}.png", std::process::id()));
        canvas.write_png(&path).unwrap();
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (16, 8));
        assert_eq!(&buf[3 * (16 + 1)..3 * (16 + 1) + 3], &PALETTE[0]);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn format_value_is_compact() {
        assert_eq!(format_value(1234.0), "1234");
        assert_eq!(format_value(12.34), "12.3");
        assert_eq!(format_value(0.5), "0.500");
        assert_eq!(format_value(8.0), "8");
        assert_eq!(format_value(0.0001), "1.0e-4");
    }
}
