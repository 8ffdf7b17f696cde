//! Sewing patterns: flat 2D panels from SVG, triangulated to a target edge length with the
//! fabric's grain, and the seams that join their edges.
//!
//! A pattern is a RON file beside its SVG (see `docs/patterns.md`):
//!
//! ```ron
//! (
//!     version: 1,
//!     svg: "ltshirt.svg",
//!     unit_m: Some(0.001),          // metres per SVG user unit; None: from the SVG's size
//!     edge_length_m: 0.02,
//!     panels: [(name: "back", path: 0, grain_deg: 0.0), (name: "front", path: 1)],
//!     seams: [(a: ("back", 2), b: ("front", 4))],
//! )
//! ```
//!
//! - A **panel** is one closed SVG `<path>` (lines and quadratic or cubic Béziers; arcs are
//!   turned into Béziers), picked by its index among the file's paths in document order, with
//!   the transforms of its ancestors applied. Its **edges** are the path's drawing segments in
//!   order (zero-length ones dropped), numbered from 0, as the pattern file's seams name them.
//! - **Units**: `unit_m` states the metres per SVG user unit; without it, the SVG's `width`
//!   (in mm, cm, in, pt or pc) over its `viewBox` width gives it. A pattern whose units are
//!   neither stated nor given in physical units is refused: a pixel is not a length of cloth.
//! - **Grain**: `grain_deg` is the warp's angle from the SVG's vertical axis (degrees,
//!   counter-clockwise). The interior vertices lie on a triangular lattice whose rows run along
//!   the weft, and every vertex's UV is its pattern position in metres in the grain's frame
//!   (`u` along the warp, `v` against the weft), so direction-dependent fabric data and
//!   textures follow the grain; the rest of Drape reads the warp as the direction of
//!   increasing `u` ([`crate::garment::material::build_cloth`]).
//! - **Seams** pair two panel edges. Both edges are split into the same number of pieces (from
//!   the longer one and the edge length), so each boundary vertex of one edge has exactly one
//!   partner on the other: the start of `a` meets the end of `b` (two panels sewn face to face
//!   run their shared edge in opposite directions), or its start with `flip: true`.
//!
//! The panel mesh lies in the plane z = 0 with x to the right and y up (SVG's y points down),
//! in metres, counter-clockwise seen from +z.
//!
//! May import: [`crate::mesh`], [`crate::math`].

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::math::{Real, Vec2, Vec3};
use crate::mesh::Mesh;

/// The newest pattern file version this build reads.
pub const PATTERN_VERSION: u32 = 1;
/// Finest edge length a pattern may ask for (m).
pub const MIN_EDGE_LENGTH_M: Real = 0.002;

/// Largest crease a seam may keep (degrees either way): a fold of 180° would lay the two
/// sides on each other.
pub const MAX_CREASE_DEG: Real = 170.0;
/// Most vertices one panel may get, so a typo in the edge length cannot exhaust memory.
pub const MAX_PANEL_VERTICES: usize = 200_000;
/// Most points of one outline's fine polyline (a quarter edge length apart), which the
/// self-crossing test compares pairwise.
pub const MAX_OUTLINE_POINTS: usize = 20_000;

/// A pattern file: which SVG, its units, the panels and the seams.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternFile {
    /// File format version ([`PATTERN_VERSION`]).
    pub version: u32,
    /// The SVG with the panel outlines, relative to the pattern file's folder.
    pub svg: PathBuf,
    /// Metres per SVG user unit; `None` takes it from the SVG's `width` and `viewBox`.
    #[serde(default)]
    pub unit_m: Option<Real>,
    /// Target edge length of the panel meshes (m).
    pub edge_length_m: Real,
    /// The panels.
    pub panels: Vec<PanelSpec>,
    /// The seams.
    #[serde(default)]
    pub seams: Vec<SeamSpec>,
    /// Largest relative length difference of a seam's two edges (the longer one's length is
    /// 1); beyond it the seam is refused. Default 0.1.
    #[serde(default = "default_mismatch")]
    pub max_length_mismatch: Real,
    /// How the panels are sewn around a body ([`SewingSpec`]); defaults when left out.
    #[serde(default)]
    pub sewing: SewingSpec,
}

/// How a pattern is placed and sewn around a body (`drape sew`, `docs/patterns.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SewingSpec {
    /// Gap between the body and the panels as they are placed (m).
    pub clearance_m: Real,
    /// Time over which the seams close, their rest length going linearly to zero (s).
    pub closing_s: Real,
    /// Time the seams are held closed before they are welded (s).
    pub hold_s: Real,
    /// Time the welded garment settles under gravity on the body (s).
    pub settle_s: Real,
    /// Compliance of the seam constraints while they close (m/N).
    pub seam_compliance_m_per_n: Real,
    /// Velocity damping rate while the seams close, with gravity off (1/s).
    pub closing_damping_per_s: Real,
}

impl Default for SewingSpec {
    fn default() -> Self {
        Self {
            clearance_m: 0.02,
            closing_s: 1.0,
            hold_s: 0.25,
            settle_s: 1.0,
            seam_compliance_m_per_n: 1.0e-6,
            closing_damping_per_s: 4.0,
        }
    }
}

/// Where a panel is placed around the body before sewing ([`crate::garment::place`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arrangement {
    /// In front of the torso, wrapped around it, seen from the front (the SVG's x to the
    /// body's left).
    Front,
    /// Behind the torso, wrapped around it, drawn as seen from the front as well (so a
    /// symmetric back panel sews to the front edge for edge).
    Back,
    /// Around the left arm (the body's left, +x), its top at the shoulder.
    LeftArm,
    /// Around the right arm (−x).
    RightArm,
}

fn default_mismatch() -> Real {
    0.1
}

/// One panel of a pattern file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelSpec {
    /// The panel's name, as seams refer to it.
    pub name: String,
    /// Index of its `<path>` among the SVG's paths, in document order, from 0.
    pub path: usize,
    /// The warp's angle from the SVG's vertical axis (degrees, counter-clockwise).
    #[serde(default)]
    pub grain_deg: Real,
    /// Where `drape sew` places it around the body; `None` leaves the panel out of sewing.
    #[serde(default)]
    pub place: Option<Arrangement>,
}

/// A seam: two panel edges sewn together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeamSpec {
    /// One edge: the panel's name and the edge's index.
    pub a: (String, usize),
    /// The other edge.
    pub b: (String, usize),
    /// Pair the start of `a` with the start of `b` (default: with its end).
    #[serde(default)]
    pub flip: bool,
    /// The angle the welded seam keeps (degrees, −170 to 170; default none: sewn flat).
    /// Positive folds the garment's outer faces toward each other across the seam, as a
    /// collar turned down over the shirt; negative folds them apart.
    #[serde(default)]
    pub crease_deg: Option<Real>,
}

/// A triangulated panel.
#[derive(Clone, Debug)]
pub struct Panel {
    /// The panel's name.
    pub name: String,
    /// The mesh in the pattern's plane (m, z = 0), UVs in the grain's frame (m).
    pub mesh: Mesh,
    /// Boundary vertices of each outline edge, in outline order, both corners included.
    pub edges: Vec<Vec<u32>>,
    /// Length of each outline edge (m).
    pub edge_lengths_m: Vec<Real>,
}

/// A seam between two panels' edges, as vertex pairs.
#[derive(Clone, Debug, PartialEq)]
pub struct Seam {
    /// Panel and edge of one side (indices into [`Pattern::panels`] and its edges).
    pub a: (usize, usize),
    /// The other side.
    pub b: (usize, usize),
    /// Vertex pairs `(vertex of a's panel, vertex of b's panel)`, from a's start to its end.
    pub pairs: Vec<(u32, u32)>,
    /// The fold the welded seam keeps (rad; 0: flat), as [`SeamSpec::crease_deg`].
    pub crease_rad: Real,
}

/// A loaded pattern: its panels, meshed, and its seams.
#[derive(Clone, Debug)]
pub struct Pattern {
    /// The pattern file it was built from.
    pub file: PatternFile,
    /// The panels, in the pattern file's order.
    pub panels: Vec<Panel>,
    /// The seams, in the pattern file's order.
    pub seams: Vec<Seam>,
}

/// What is wrong with a pattern; every variant names the file, and the panel or seam.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// A file could not be read.
    #[error("{}: cannot read the file: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The pattern file is not valid RON for a pattern.
    #[error("{}: not a pattern file: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A value of the pattern file, the SVG, a panel or a seam is unusable.
    #[error("{}: {what}: {why}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The panel, seam or field.
        what: String,
        /// What is wrong.
        why: String,
    },
}

impl Pattern {
    /// Reads a pattern file and its SVG, and meshes the panels.
    pub fn load(path: &Path) -> Result<Pattern, PatternError> {
        let text = std::fs::read_to_string(path).map_err(|source| PatternError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let file: PatternFile = ron::from_str(&text).map_err(|e| PatternError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let svg_path = path.parent().unwrap_or(Path::new(".")).join(&file.svg);
        let svg = std::fs::read_to_string(&svg_path).map_err(|source| PatternError::Io {
            path: svg_path.clone(),
            source,
        })?;
        Pattern::build(&file, path, &svg, &svg_path)
    }

    /// Meshes the panels of `file` from the SVG text `svg`; errors name `file_path` for the
    /// pattern file's own mistakes and `svg_path` for the SVG's.
    pub fn build(
        file: &PatternFile,
        file_path: &Path,
        svg: &str,
        svg_path: &Path,
    ) -> Result<Pattern, PatternError> {
        let invalid = |what: &str, why: String| PatternError::Invalid {
            path: file_path.to_path_buf(),
            what: what.to_owned(),
            why,
        };
        if file.version > PATTERN_VERSION {
            return Err(invalid(
                "version",
                format!(
                    "version {} is newer than this Drape reads ({PATTERN_VERSION}); update Drape",
                    file.version
                ),
            ));
        }
        let h = file.edge_length_m;
        if !(h.is_finite() && h >= MIN_EDGE_LENGTH_M) {
            return Err(invalid(
                "edge_length_m",
                format!("{h} m; it must be at least {MIN_EDGE_LENGTH_M} m"),
            ));
        }
        let mismatch = file.max_length_mismatch;
        if !(mismatch.is_finite() && (0.0..1.0).contains(&mismatch)) {
            return Err(invalid(
                "max_length_mismatch",
                format!("{mismatch}; it must be in [0, 1)"),
            ));
        }
        if file.panels.is_empty() {
            return Err(invalid("panels", "the pattern has no panels".into()));
        }
        let doc = SvgDoc::parse(svg, svg_path)?;
        let unit_m = match file.unit_m {
            Some(u) if u.is_finite() && u > 0.0 => u as f64,
            Some(u) => return Err(invalid("unit_m", format!("{u}; it must be positive"))),
            None => doc.unit_m.ok_or_else(|| {
                invalid(
                    "unit_m",
                    format!(
                        "the units are unknown: {} gives no physical width (mm, cm, in, pt \
                         or pc); state the metres per SVG unit, e.g. `unit_m: Some(0.001)` for \
                         millimetres",
                        svg_path.display()
                    ),
                )
            })?,
        };

        // The outlines, in metres, y up.
        let mut outlines = Vec::with_capacity(file.panels.len());
        for (i, spec) in file.panels.iter().enumerate() {
            let what = format!("panel '{}'", spec.name);
            if file.panels[..i].iter().any(|p| p.name == spec.name) {
                return Err(invalid(&what, "two panels have this name".into()));
            }
            let Some(path) = doc.paths.get(spec.path) else {
                return Err(invalid(
                    &what,
                    format!(
                        "path {} does not exist: {} has {} paths",
                        spec.path,
                        svg_path.display(),
                        doc.paths.len()
                    ),
                ));
            };
            let outline = Outline::new(path, unit_m, h as f64)
                .map_err(|why| invalid(&format!("{what} (path {} of the SVG)", spec.path), why))?;
            outlines.push(outline);
        }

        // Seams: resolve the names, check the lengths, give both edges one piece count.
        let panel_index = |(name, edge): &(String, usize), what: &str| {
            let p = file
                .panels
                .iter()
                .position(|p| &p.name == name)
                .ok_or_else(|| invalid(what, format!("there is no panel '{name}'")))?;
            let edges = outlines[p].edges.len();
            if *edge >= edges {
                return Err(invalid(
                    what,
                    format!("panel '{name}' has edges 0 to {}, not {edge}", edges - 1),
                ));
            }
            Ok((p, *edge))
        };
        let mut pieces: Vec<Vec<Option<usize>>> =
            outlines.iter().map(|o| vec![None; o.edges.len()]).collect();
        let mut sides = Vec::with_capacity(file.seams.len());
        for (k, seam) in file.seams.iter().enumerate() {
            let what = format!(
                "seam {k} ('{}' edge {} to '{}' edge {})",
                seam.a.0, seam.a.1, seam.b.0, seam.b.1
            );
            let a = panel_index(&seam.a, &what)?;
            let b = panel_index(&seam.b, &what)?;
            if a == b {
                return Err(invalid(&what, "an edge cannot be sewn to itself".into()));
            }
            for s in [a, b] {
                if pieces[s.0][s.1].is_some() {
                    return Err(invalid(
                        &what,
                        format!(
                            "edge {} of '{}' is already in another seam",
                            s.1, file.panels[s.0].name
                        ),
                    ));
                }
            }
            let (la, lb) = (outlines[a.0].lengths[a.1], outlines[b.0].lengths[b.1]);
            let longer = la.max(lb);
            if (la - lb).abs() > mismatch as f64 * longer {
                return Err(invalid(
                    &what,
                    format!(
                        "the edges are {:.1} mm and {:.1} mm long, {:.0} % apart (at most {:.0} \
                         % is sewn; max_length_mismatch)",
                        la * 1e3,
                        lb * 1e3,
                        (la - lb).abs() / longer * 100.0,
                        mismatch * 100.0
                    ),
                ));
            }
            let crease = seam.crease_deg.unwrap_or(0.0);
            if !(crease.is_finite() && crease.abs() <= MAX_CREASE_DEG) {
                return Err(invalid(
                    &what,
                    format!(
                        "crease_deg {crease}; it must be between -{MAX_CREASE_DEG} and \
                         {MAX_CREASE_DEG} degrees"
                    ),
                ));
            }
            let n = ((longer / h as f64).round() as usize).max(1);
            pieces[a.0][a.1] = Some(n);
            pieces[b.0][b.1] = Some(n);
            sides.push((a, b, seam.flip, crease.to_radians()));
        }

        let mut panels = Vec::with_capacity(outlines.len());
        for ((spec, outline), pieces) in file.panels.iter().zip(&outlines).zip(&pieces) {
            let panel = outline
                .mesh(&spec.name, h as f64, spec.grain_deg as f64, pieces)
                .map_err(|why| invalid(&format!("panel '{}'", spec.name), why))?;
            panels.push(panel);
        }
        let seams = sides
            .into_iter()
            .map(|(a, b, flip, crease_rad)| {
                let ea = &panels[a.0].edges[a.1];
                let eb = &panels[b.0].edges[b.1];
                let pairs = ea
                    .iter()
                    .enumerate()
                    .map(|(i, &va)| {
                        let j = if flip { i } else { eb.len() - 1 - i };
                        (va, eb[j])
                    })
                    .collect();
                Seam {
                    a,
                    b,
                    pairs,
                    crease_rad,
                }
            })
            .collect();
        Ok(Pattern {
            file: file.clone(),
            panels,
            seams,
        })
    }
}

/// The parts of an SVG a pattern uses: every `<path>`'s data with its transform, and the
/// physical size of a user unit when the file states one.
struct SvgDoc {
    /// `(path data, transform)` per `<path>`, in document order.
    paths: Vec<(String, [f64; 6])>,
    /// Metres per user unit, from `width` in physical units over the `viewBox` width.
    unit_m: Option<f64>,
}

impl SvgDoc {
    fn parse(text: &str, path: &Path) -> Result<SvgDoc, PatternError> {
        let invalid = |why: String| PatternError::Invalid {
            path: path.to_path_buf(),
            what: "SVG".into(),
            why,
        };
        let doc = roxmltree::Document::parse(text).map_err(|e| invalid(e.to_string()))?;
        let root = doc.root_element();
        if root.tag_name().name() != "svg" {
            return Err(invalid(format!(
                "the root element is <{}>, not <svg>",
                root.tag_name().name()
            )));
        }
        let view_w = root
            .attribute("viewBox")
            .and_then(|v| svgtypes::ViewBox::from_str(v).ok())
            .map(|v| v.w);
        let unit_m = root
            .attribute("width")
            .and_then(|w| svgtypes::Length::from_str(w).ok())
            .and_then(|len| {
                use svgtypes::LengthUnit as U;
                let per = match len.unit {
                    U::Mm => 1e-3,
                    U::Cm => 1e-2,
                    U::In => 0.0254,
                    U::Pt => 0.0254 / 72.0,
                    U::Pc => 0.0254 / 6.0,
                    _ => return None,
                };
                // Without a viewBox, a user unit is the width's unit.
                let units = view_w.unwrap_or(len.number);
                (units > 0.0).then(|| len.number * per / units)
            });
        let mut paths = Vec::new();
        for node in root.descendants().filter(|n| n.has_tag_name("path")) {
            let mut m = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];
            for anc in node.ancestors().filter(|n| n.is_element()) {
                if let Some(t) = anc.attribute("transform") {
                    let t = svgtypes::Transform::from_str(t)
                        .map_err(|e| invalid(format!("a transform '{t}': {e}")))?;
                    m = compose([t.a, t.b, t.c, t.d, t.e, t.f], m);
                }
            }
            paths.push((node.attribute("d").unwrap_or("").to_owned(), m));
        }
        Ok(SvgDoc { paths, unit_m })
    }
}

/// `outer ∘ inner` for SVG matrices `[a b c d e f]` (x' = a x + c y + e, y' = b x + d y + f).
fn compose(o: [f64; 6], i: [f64; 6]) -> [f64; 6] {
    [
        o[0] * i[0] + o[2] * i[1],
        o[1] * i[0] + o[3] * i[1],
        o[0] * i[2] + o[2] * i[3],
        o[1] * i[2] + o[3] * i[3],
        o[0] * i[4] + o[2] * i[5] + o[4],
        o[1] * i[4] + o[3] * i[5] + o[5],
    ]
}

/// One edge of an outline: a straight line or a Bézier, in metres with y up.
#[derive(Clone, Copy, Debug)]
enum Piece {
    Line([f64; 2], [f64; 2]),
    Cubic([[f64; 2]; 4]),
}

impl Piece {
    fn at(&self, t: f64) -> [f64; 2] {
        match *self {
            Piece::Line(a, b) => [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t],
            Piece::Cubic([p0, p1, p2, p3]) => {
                let s = 1.0 - t;
                let (w0, w1, w2, w3) = (s * s * s, 3.0 * s * s * t, 3.0 * s * t * t, t * t * t);
                [
                    w0 * p0[0] + w1 * p1[0] + w2 * p2[0] + w3 * p3[0],
                    w0 * p0[1] + w1 * p1[1] + w2 * p2[1] + w3 * p3[1],
                ]
            }
        }
    }

    /// A dense polyline along the piece, and its cumulative arc lengths (m).
    fn dense(&self, h: f64) -> (Vec<[f64; 2]>, Vec<f64>) {
        let n = match self {
            Piece::Line(..) => 1,
            // Fine enough that the polyline's length is the curve's to well under 0.1 %.
            Piece::Cubic(p) => {
                let hull = dist(p[0], p[1]) + dist(p[1], p[2]) + dist(p[2], p[3]);
                ((hull / h * 16.0).ceil() as usize).clamp(16, 4096)
            }
        };
        let pts: Vec<[f64; 2]> = (0..=n).map(|k| self.at(k as f64 / n as f64)).collect();
        let mut s = vec![0.0];
        for w in pts.windows(2) {
            s.push(s.last().unwrap() + dist(w[0], w[1]));
        }
        (pts, s)
    }
}

fn dist(a: [f64; 2], b: [f64; 2]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

/// A closed, simple panel outline; its edges in the file's order and direction.
struct Outline {
    edges: Vec<Piece>,
    lengths: Vec<f64>,
}

impl Outline {
    fn new((data, m): &(String, [f64; 6]), unit_m: f64, h: f64) -> Result<Outline, String> {
        use svgtypes::SimplePathSegment as S;
        // SVG y points down; the panel's y points up.
        let map = |x: f64, y: f64| {
            let (px, py) = (m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]);
            [px * unit_m, -py * unit_m]
        };
        let mut edges = Vec::new();
        let (mut start, mut cur): (Option<[f64; 2]>, [f64; 2]) = (None, [0.0, 0.0]);
        let mut closed = false;
        for seg in svgtypes::SimplifyingPathParser::from(data.as_str()) {
            let seg = seg.map_err(|e| format!("bad path data: {e}"))?;
            if closed && !matches!(seg, S::MoveTo { .. }) {
                return Err("the path goes on after it closes".into());
            }
            match seg {
                S::MoveTo { x, y } => {
                    if start.is_some() {
                        return Err(
                            "the path has more than one outline (holes and several pieces are \
                             not panels); draw one closed path per panel"
                                .into(),
                        );
                    }
                    cur = map(x, y);
                    start = Some(cur);
                }
                S::LineTo { x, y } => {
                    let p = map(x, y);
                    edges.push(Piece::Line(cur, p));
                    cur = p;
                }
                S::CurveTo {
                    x1,
                    y1,
                    x2,
                    y2,
                    x,
                    y,
                } => {
                    let p = map(x, y);
                    edges.push(Piece::Cubic([cur, map(x1, y1), map(x2, y2), p]));
                    cur = p;
                }
                S::Quadratic { x1, y1, x, y } => {
                    let (q, p) = (map(x1, y1), map(x, y));
                    let c1 = [
                        cur[0] + 2.0 / 3.0 * (q[0] - cur[0]),
                        cur[1] + 2.0 / 3.0 * (q[1] - cur[1]),
                    ];
                    let c2 = [
                        p[0] + 2.0 / 3.0 * (q[0] - p[0]),
                        p[1] + 2.0 / 3.0 * (q[1] - p[1]),
                    ];
                    edges.push(Piece::Cubic([cur, c1, c2, p]));
                    cur = p;
                }
                S::ClosePath => {
                    let s = start.ok_or("the path closes before it starts")?;
                    edges.push(Piece::Line(cur, s));
                    cur = s;
                    closed = true;
                }
            }
        }
        let Some(s) = start else {
            return Err("the path is empty".into());
        };
        // A path that ends where it started is closed, with or without `z`.
        let eps = 1e-6;
        if !closed && dist(cur, s) > eps {
            return Err(format!(
                "the outline is open: it ends {:.1} mm from its start; close it (`z`)",
                dist(cur, s) * 1e3
            ));
        }
        let mut lengths: Vec<f64> = edges
            .iter()
            .map(|e| *e.dense(h).1.last().unwrap())
            .collect();
        let keep: Vec<bool> = lengths.iter().map(|&l| l > eps).collect();
        let mut k = keep.iter();
        edges.retain(|_| *k.next().unwrap());
        let mut k = keep.iter();
        lengths.retain(|_| *k.next().unwrap());
        if edges.len() < 2 {
            return Err("the outline has fewer than two edges".into());
        }
        let outline = Outline { edges, lengths };
        let poly = outline.polyline(h / 4.0);
        // The crossing test is quadratic in the points: bound it for hostile files.
        if poly.len() > MAX_OUTLINE_POINTS {
            return Err(format!(
                "the outline needs {} points at this edge length, more than {MAX_OUTLINE_POINTS}; \
                 raise edge_length_m or simplify the path",
                poly.len()
            ));
        }
        if let Some((i, j)) = self_intersection(&poly) {
            return Err(format!(
                "the outline crosses itself (near ({:.1}, {:.1}) mm and ({:.1}, {:.1}) mm)",
                poly[i][0] * 1e3,
                poly[i][1] * 1e3,
                poly[j][0] * 1e3,
                poly[j][1] * 1e3
            ));
        }
        let area = signed_area(&poly);
        if area.abs() < h * h {
            return Err(format!(
                "the outline encloses {:.1} cm², too little to mesh at this edge length",
                area.abs() * 1e4
            ));
        }
        Ok(outline)
    }

    /// The outline as a closed polyline (no repeated last point), at spacing about `h`.
    fn polyline(&self, h: f64) -> Vec<[f64; 2]> {
        let mut out = Vec::new();
        for e in &self.edges {
            let (pts, _) = e.dense(h);
            out.extend_from_slice(&pts[..pts.len() - 1]);
        }
        out
    }
}

impl Outline {
    /// Meshes the panel: edge `k` split into `pieces[k]` equal arc-length pieces (or about `h`
    /// long when no seam fixed the count), a triangular lattice of spacing `h` along the grain
    /// inside, and a constrained Delaunay triangulation of both.
    fn mesh(
        &self,
        name: &str,
        h: f64,
        grain_deg: f64,
        pieces: &[Option<usize>],
    ) -> Result<Panel, String> {
        use spade::{ConstrainedDelaunayTriangulation, Point2, Triangulation};
        let n_edges = self.edges.len();
        let mut pos: Vec<[f64; 2]> = Vec::new();
        // Corner k: the start of edge k.
        for e in &self.edges {
            pos.push(e.at(0.0));
        }
        let mut edges: Vec<Vec<u32>> = Vec::with_capacity(n_edges);
        for (k, e) in self.edges.iter().enumerate() {
            let n = pieces[k].unwrap_or_else(|| ((self.lengths[k] / h).round() as usize).max(1));
            let (pts, s) = e.dense(h);
            let total = *s.last().unwrap();
            let mut list = vec![k as u32];
            let mut j = 0;
            for i in 1..n {
                let target = total * i as f64 / n as f64;
                while s[j + 1] < target {
                    j += 1;
                }
                let t = (target - s[j]) / (s[j + 1] - s[j]).max(f64::MIN_POSITIVE);
                let (a, b) = (pts[j], pts[j + 1]);
                list.push(pos.len() as u32);
                pos.push([a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t]);
            }
            list.push(((k + 1) % n_edges) as u32);
            edges.push(list);
        }
        let boundary: Vec<[f64; 2]> = edges
            .iter()
            .flat_map(|l| l[..l.len() - 1].iter().map(|&v| pos[v as usize]))
            .collect();
        let n_boundary = pos.len();

        // The lattice: rows along the weft, `h·√3/2` apart along the warp, every other one
        // shifted by `h/2`.
        let g = grain_deg.to_radians();
        let warp = [-g.sin(), g.cos()];
        let weft = [g.cos(), g.sin()];
        let to_grain = |p: [f64; 2]| {
            [
                p[0] * weft[0] + p[1] * weft[1],
                p[0] * warp[0] + p[1] * warp[1],
            ]
        };
        let (mut lo, mut hi) = ([f64::MAX; 2], [f64::MIN; 2]);
        for &p in &boundary {
            let q = to_grain(p);
            for d in 0..2 {
                lo[d] = lo[d].min(q[d]);
                hi[d] = hi[d].max(q[d]);
            }
        }
        let row = h * 3f64.sqrt() / 2.0;
        let estimate = ((hi[0] - lo[0]) / h + 2.0) * ((hi[1] - lo[1]) / row + 2.0);
        if estimate + n_boundary as f64 > MAX_PANEL_VERTICES as f64 {
            return Err(format!(
                "about {estimate:.0} vertices at this edge length, more than {MAX_PANEL_VERTICES}; \
                 raise edge_length_m"
            ));
        }
        let clearance2 = (0.6 * h).powi(2);
        let mut r = 0;
        while lo[1] + r as f64 * row <= hi[1] {
            let b = lo[1] + r as f64 * row;
            let mut a = lo[0] + if r % 2 == 1 { h / 2.0 } else { 0.0 };
            while a <= hi[0] {
                let p = [a * weft[0] + b * warp[0], a * weft[1] + b * warp[1]];
                if inside(&boundary, p) && boundary.iter().all(|&q| d2(p, q) > clearance2) {
                    pos.push(p);
                }
                a += h;
            }
            r += 1;
        }

        let mut cdt: ConstrainedDelaunayTriangulation<Point2<f64>> =
            ConstrainedDelaunayTriangulation::new();
        let mut handles = Vec::with_capacity(pos.len());
        for p in &pos {
            let v = cdt
                .insert(Point2::new(p[0], p[1]))
                .map_err(|e| format!("cannot triangulate: {e:?}"))?;
            handles.push(v);
        }
        if cdt.num_vertices() != pos.len() {
            return Err("two outline points coincide; the outline touches itself".into());
        }
        for list in &edges {
            for w in list.windows(2) {
                let (a, b) = (handles[w[0] as usize], handles[w[1] as usize]);
                if !cdt.can_add_constraint(a, b) {
                    return Err(format!(
                        "the outline comes closer to itself than the edge length near ({:.1}, \
                         {:.1}) mm; lower edge_length_m",
                        pos[w[0] as usize][0] * 1e3,
                        pos[w[0] as usize][1] * 1e3
                    ));
                }
                cdt.add_constraint(a, b);
            }
        }
        let index_of: std::collections::HashMap<usize, u32> = handles
            .iter()
            .enumerate()
            .map(|(i, v)| (v.index(), i as u32))
            .collect();
        // Inside: the faces an odd number of outline edges away from the outer face. Found by
        // walking the faces (0–1 breadth-first), not by testing centroids, which the slivers of
        // nearly collinear outline points put on either side of the outline at random.
        let mut crossings = vec![u32::MAX; cdt.num_all_faces()];
        let mut queue = std::collections::VecDeque::new();
        for e in cdt.convex_hull() {
            if let Some(f) = e.rev().face().as_inner() {
                let d = u32::from(e.is_constraint_edge());
                let k = f.fix().index();
                if d < crossings[k] {
                    crossings[k] = d;
                    queue.push_back(f);
                }
            }
        }
        while let Some(f) = queue.pop_front() {
            let d0 = crossings[f.fix().index()];
            for e in f.adjacent_edges() {
                let Some(g) = e.rev().face().as_inner() else {
                    continue;
                };
                let c = u32::from(e.is_constraint_edge());
                let k = g.fix().index();
                if d0 + c < crossings[k] {
                    crossings[k] = d0 + c;
                    if c == 0 {
                        queue.push_front(g);
                    } else {
                        queue.push_back(g);
                    }
                }
            }
        }
        let mut indices = Vec::new();
        for face in cdt.inner_faces() {
            let t = face.vertices().map(|v| index_of[&v.fix().index()]);
            let [a, b, c] = t.map(|i| pos[i as usize]);
            if crossings[face.fix().index()] % 2 == 0 {
                continue;
            }
            let area2 = (b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1]);
            indices.push(if area2 >= 0.0 { t } else { [t[0], t[2], t[1]] });
        }
        let mesh = Mesh {
            name: name.to_owned(),
            positions: pos
                .iter()
                .map(|p| Vec3::new(p[0] as Real, p[1] as Real, 0.0))
                .collect(),
            indices,
            normals: None,
            uvs: Some(
                pos.iter()
                    .map(|&p| {
                        let q = to_grain(p);
                        Vec2::new(q[1] as Real, -q[0] as Real)
                    })
                    .collect(),
            ),
        };
        mesh.validate()
            .map_err(|e| format!("the panel mesh is unusable: {e}"))?;
        Ok(Panel {
            name: name.to_owned(),
            mesh,
            edges,
            edge_lengths_m: self.lengths.iter().map(|&l| l as Real).collect(),
        })
    }
}

fn d2(a: [f64; 2], b: [f64; 2]) -> f64 {
    (a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)
}

/// The signed area of a closed polyline (m², positive counter-clockwise).
fn signed_area(p: &[[f64; 2]]) -> f64 {
    let n = p.len();
    (0..n)
        .map(|i| {
            let (a, b) = (p[i], p[(i + 1) % n]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum::<f64>()
        / 2.0
}

/// Whether `p` is inside the closed polyline (even-odd rule).
fn inside(poly: &[[f64; 2]], p: [f64; 2]) -> bool {
    let n = poly.len();
    let mut c = false;
    for i in 0..n {
        let (a, b) = (poly[i], poly[(i + 1) % n]);
        if (a[1] > p[1]) != (b[1] > p[1]) {
            let x = a[0] + (p[1] - a[1]) / (b[1] - a[1]) * (b[0] - a[0]);
            if p[0] < x {
                c = !c;
            }
        }
    }
    c
}

/// Two non-adjacent segments of the closed polyline that cross, if any (their first points).
fn self_intersection(p: &[[f64; 2]]) -> Option<(usize, usize)> {
    let n = p.len();
    let orient = |a: [f64; 2], b: [f64; 2], c: [f64; 2]| {
        (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    };
    for i in 0..n {
        let (a, b) = (p[i], p[(i + 1) % n]);
        for j in i + 2..n {
            if i == 0 && j == n - 1 {
                continue;
            }
            let (c, d) = (p[j], p[(j + 1) % n]);
            let (o1, o2) = (orient(a, b, c), orient(a, b, d));
            let (o3, o4) = (orient(c, d, a), orient(c, d, b));
            if o1 * o2 < 0.0 && o3 * o4 < 0.0 {
                return Some((i, j));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panel edge in a test: the panel's name and the edge's index.
    type Edge<'a> = (&'a str, usize);

    fn file(panels: &[Edge], seams: &[(Edge, Edge)]) -> PatternFile {
        PatternFile {
            version: 1,
            svg: "p.svg".into(),
            unit_m: Some(0.001),
            edge_length_m: 0.02,
            panels: panels
                .iter()
                .map(|&(name, path)| PanelSpec {
                    name: name.into(),
                    path,
                    grain_deg: 0.0,
                    place: None,
                })
                .collect(),
            seams: seams
                .iter()
                .map(|&((a, i), (b, j))| SeamSpec {
                    a: (a.into(), i),
                    b: (b.into(), j),
                    flip: false,
                    crease_deg: None,
                })
                .collect(),
            max_length_mismatch: 0.1,
            sewing: SewingSpec::default(),
        }
    }

    fn build(f: &PatternFile, svg: &str) -> Result<Pattern, String> {
        Pattern::build(f, Path::new("p.ron"), svg, Path::new("p.svg")).map_err(|e| e.to_string())
    }

    /// Two 200 mm × 300 mm rectangles, the second drawn clockwise.
    const TWO: &str = r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 600 400">
        <path d="M0,0 H200 V300 H0 Z"/>
        <g transform="translate(300,0)"><path d="M0,0 V300 H200 V0 Z"/></g></svg>"#;

    #[test]
    fn a_rectangle_meshes_to_the_edge_length_with_its_area_and_edges() {
        let p = build(&file(&[("a", 0)], &[]), TWO).unwrap();
        let panel = &p.panels[0];
        assert_eq!(panel.edges.len(), 4);
        assert_eq!(panel.edge_lengths_m, [0.2, 0.3, 0.2, 0.3]);
        // 200 mm at 20 mm: 10 pieces, 11 vertices, corners shared with the neighbours.
        assert_eq!(panel.edges[0].len(), 11);
        assert_eq!(panel.edges[0].last(), panel.edges[1].first());
        assert!(
            (panel.mesh.area() - 0.06).abs() < 1e-6,
            "{}",
            panel.mesh.area()
        );
        // Every triangle counter-clockwise from +z, and no sliver.
        for t in &panel.mesh.indices {
            let [a, b, c] = t.map(|i| panel.mesh.positions[i as usize]);
            let n = (b - a).cross(c - a);
            assert!(n.z > 0.0);
            for (p, q, r) in [(a, b, c), (b, c, a), (c, a, b)] {
                let angle = (q - p).angle_between(r - p).to_degrees();
                assert!(angle > 20.0, "a {angle}° corner");
            }
        }
        // SVG's y points down, the panel's up.
        assert!(panel
            .mesh
            .positions
            .iter()
            .all(|p| p.y <= 1e-6 && p.y >= -0.3 - 1e-6));
    }

    #[test]
    fn seams_pair_the_start_of_one_edge_with_the_end_of_the_other() {
        // a's right side (edge 1, down) against b's left side (edge 0 of a clockwise path, down
        // as well): with flip the starts meet.
        let mut f = file(&[("a", 0), ("b", 1)], &[(("a", 1), ("b", 0))]);
        let p = build(&f, TWO).unwrap();
        let s = &p.seams[0];
        assert_eq!(s.pairs.len(), 16, "300 mm at 20 mm: 15 pieces");
        let pa = &p.panels[0].mesh.positions;
        let pb = &p.panels[1].mesh.positions;
        let (first_a, first_b) = (pa[s.pairs[0].0 as usize], pb[s.pairs[0].1 as usize]);
        assert!((first_a.y - 0.0).abs() < 1e-6 && (first_b.y + 0.3).abs() < 1e-6);
        f.seams[0].flip = true;
        let p = build(&f, TWO).unwrap();
        let s = &p.seams[0];
        for &(i, j) in &s.pairs {
            let (a, b) = (pa[i as usize], p.panels[1].mesh.positions[j as usize]);
            assert!(
                (a.y - b.y).abs() < 1e-6,
                "flipped pairs meet at equal heights"
            );
            assert!(
                (b.x - a.x - 0.1).abs() < 1e-6,
                "b's left side is 100 mm right of a's"
            );
        }
    }

    #[test]
    fn the_grain_turns_the_lattice_and_the_uvs() {
        let mut f = file(&[("a", 0)], &[]);
        f.panels[0].grain_deg = 90.0;
        let p = build(&f, TWO).unwrap();
        let m = &p.panels[0].mesh;
        for (p, uv) in m.positions.iter().zip(m.uvs.as_ref().unwrap()) {
            // The warp along −x, the weft along +y: u = −x, v = −y.
            assert!((uv.x + p.x).abs() < 1e-6 && (uv.y + p.y).abs() < 1e-6);
        }
    }

    #[test]
    fn bad_patterns_are_errors_naming_the_panel_or_seam() {
        let bad = |f: &PatternFile, svg: &str| build(f, svg).unwrap_err();
        let open = r#"<svg viewBox="0 0 10 10"><path d="M0,0 L100,0 L100,100"/></svg>"#;
        let e = bad(&file(&[("a", 0)], &[]), open);
        assert!(e.contains("panel 'a'") && e.contains("open"), "{e}");
        let bowtie = r#"<svg viewBox="0 0 10 10"><path d="M0,0 L100,100 L100,0 L0,100 Z"/></svg>"#;
        let e = bad(&file(&[("a", 0)], &[]), bowtie);
        assert!(e.contains("crosses itself"), "{e}");
        let e = bad(&file(&[("a", 0)], &[(("a", 0), ("b", 1))]), TWO);
        assert!(e.contains("seam 0") && e.contains("no panel 'b'"), "{e}");
        // The 200 mm top against the 300 mm side: 33 % apart.
        let e = bad(&file(&[("a", 0), ("b", 1)], &[(("a", 0), ("b", 0))]), TWO);
        assert!(e.contains("seam 0") && e.contains("33 %"), "{e}");
        let e = bad(&file(&[("a", 0), ("b", 1)], &[(("a", 9), ("b", 0))]), TWO);
        assert!(e.contains("edges 0 to 3, not 9"), "{e}");
        let e = bad(&file(&[("a", 5)], &[]), TWO);
        assert!(
            e.contains("path 5 does not exist") && e.contains("2 paths"),
            "{e}"
        );
        let mut f = file(&[("a", 0)], &[]);
        f.unit_m = None;
        let e = bad(&f, TWO);
        assert!(
            e.contains("units are unknown") && e.contains("p.svg"),
            "{e}"
        );
        // A width in millimetres states them.
        let mm = TWO.replace("viewBox", r#"width="600mm" viewBox"#);
        assert!((build(&f, &mm).unwrap().panels[0].edge_lengths_m[0] - 0.2).abs() < 1e-6);
        // Six 10 m curves at 2 mm: too many points to test for crossings.
        let wavy = r#"<svg><path d="M0,0 C2000,3000 4000,3000 6000,0 C8000,-3000 10000,-3000 12000,0
            C12000,4000 12000,8000 12000,12000 C8000,12000 4000,12000 0,12000
            C-3000,8000 -3000,4000 0,2000 L0,0 Z"/></svg>"#;
        let mut f = file(&[("a", 0)], &[]);
        f.edge_length_m = MIN_EDGE_LENGTH_M;
        let e = bad(&f, wavy);
        assert!(e.contains("points at this edge length"), "{e}");
        let mut f = file(&[("a", 0)], &[]);
        f.version = 2;
        assert!(bad(&f, TWO).contains("newer"));
        assert!(bad(&file(&[("a", 0)], &[]), "<svg").contains("p.svg"));
    }
}
