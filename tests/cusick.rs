use drape::cusick::*;
use drape::material::{builtin_fabric, Fabric};

#[test]
#[ignore]
fn explore() {
    let base = builtin_fabric("cotton_shirting").unwrap();
    let runs: Vec<(&str, Fabric, CusickOptions)> = vec![
        (
            "default",
            base.clone(),
            CusickOptions {
                vertices: 500,
                max_time_s: 1.0,
                ..Default::default()
            },
        ),
        (
            "nofric",
            Fabric {
                friction: 0.0,
                ..base.clone()
            },
            CusickOptions {
                vertices: 500,
                max_time_s: 1.0,
                ..Default::default()
            },
        ),
        (
            "bigped",
            base.clone(),
            CusickOptions {
                vertices: 500,
                max_time_s: 1.0,
                pedestal_radius_m: 0.149,
                ..Default::default()
            },
        ),
        (
            "it8",
            base.clone(),
            CusickOptions {
                vertices: 500,
                max_time_s: 1.0,
                iterations: 8,
                ..Default::default()
            },
        ),
    ];
    for (name, f, o) in runs {
        let r = cusick_test(&f, &o).unwrap();
        println!(
            "{name}: DC {:.4} stretch {:.4} settled {} speed {:.4} wall {:.1}",
            r.drape_coefficient, r.max_stretch, r.settled, r.final_max_speed_m_per_s, r.wall_s
        );
    }
}
