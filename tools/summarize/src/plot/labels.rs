//! Placing chart labels so that none overprints another: each label's box
//! is estimated from its length and font size (no font metrics in a
//! hand-written SVG, so the estimate is generous), and a label takes the
//! first spot around its point that is inside the plot and clear of every
//! box placed before it.

/// A text box in SVG units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    fn inside(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
}

/// The width of `text` at `size` px: sans-serif runs about 0.55 em a
/// character on average; 0.62 leaves room for wide letters and digits.
pub(crate) fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.62
}

/// The box of `text` drawn at (`x`, `y`) (its baseline) with `anchor`
/// `start` or `end`.
pub(crate) fn text_box(text: &str, x: f64, y: f64, size: f64, end: bool) -> Rect {
    let w = text_width(text, size);
    let x0 = if end { x - w } else { x };
    Rect {
        x0,
        y0: y - size,
        x1: x0 + w,
        y1: y + size * 0.3,
    }
}

/// Where a label goes: its baseline point and whether it is anchored at
/// its end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spot {
    pub x: f64,
    pub y: f64,
    pub end: bool,
}

/// The first spot around point (`px`, `py`) where `text` fits inside
/// `area` and clear of `taken`; the spot is added to `taken`. `None` when
/// no spot is free.
pub(crate) fn place(
    text: &str,
    (px, py): (f64, f64),
    size: f64,
    area: &Rect,
    taken: &mut Vec<Rect>,
) -> Option<Spot> {
    // Right and above first (the reading order), then below, left, and
    // farther out in steps of a line.
    let line = size * 1.3;
    let mut spots = Vec::new();
    for k in 0..6 {
        let d = k as f64 * line;
        for (dx, dy, end) in [
            (6.0, -5.0 - d, false),
            (6.0, size + 4.0 + d, false),
            (-6.0, -5.0 - d, true),
            (-6.0, size + 4.0 + d, true),
        ] {
            spots.push(Spot {
                x: px + dx,
                y: py + dy,
                end,
            });
        }
    }
    let hit = spots.into_iter().find(|s| {
        let b = text_box(text, s.x, s.y, size, s.end);
        b.inside(area) && !taken.iter().any(|t| t.overlaps(&b))
    })?;
    taken.push(text_box(text, hit.x, hit.y, size, hit.end));
    Some(hit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_at_one_point_never_overlap() {
        let area = Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 400.0,
            y1: 300.0,
        };
        let mut taken = Vec::new();
        let spots: Vec<Spot> = (0..4)
            .map(|i| {
                place(
                    &format!("label number {i}"),
                    (200.0, 150.0),
                    10.0,
                    &area,
                    &mut taken,
                )
                .expect("a spot")
            })
            .collect();
        for (i, a) in taken.iter().enumerate() {
            assert!(a.inside(&area));
            for b in &taken[i + 1..] {
                assert!(!a.overlaps(b), "{a:?} {b:?}");
            }
        }
        assert_eq!(spots.len(), 4);
    }

    #[test]
    fn no_room_is_no_spot() {
        let area = Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 20.0,
            y1: 20.0,
        };
        assert_eq!(
            place(
                "far too long a label",
                (10.0, 10.0),
                10.0,
                &area,
                &mut Vec::new()
            ),
            None
        );
    }
}
