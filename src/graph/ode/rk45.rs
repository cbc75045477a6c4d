//! The Dormand–Prince 5(4) explicit Runge–Kutta pair (Dormand & Prince 1980; the tableau of
//! Hairer, Nørsett & Wanner, *Solving ODEs I*, §II.5, Table 5.2), advanced with the fifth-order
//! solution (local extrapolation), the first-same-as-last property, and the standard step-size
//! controller `h_new = h · min(10, max(0.2, 0.9 · err^(-1/5)))` (ibid. §II.4, eq. 4.13). Steps are
//! shortened to land exactly on each output time, so no interpolation is needed.

use super::{OdeFailure, OdeOptions, OdeSystem, all_finite, initial_step, scaled_rms};

const C: [f64; 7] = [0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0];

/// Row i holds a_{i,0..i}.
const A: [[f64; 6]; 7] = [
    [0.0; 6],
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
    [
        19372.0 / 6561.0,
        -25360.0 / 2187.0,
        64448.0 / 6561.0,
        -212.0 / 729.0,
        0.0,
        0.0,
    ],
    [
        9017.0 / 3168.0,
        -355.0 / 33.0,
        46732.0 / 5247.0,
        49.0 / 176.0,
        -5103.0 / 18656.0,
        0.0,
    ],
    [
        35.0 / 384.0,
        0.0,
        500.0 / 1113.0,
        125.0 / 192.0,
        -2187.0 / 6784.0,
        11.0 / 84.0,
    ],
];

/// Fifth-order weights minus the embedded fourth-order weights (b_i − b̂_i).
const E: [f64; 7] = [
    71.0 / 57600.0,
    0.0,
    -71.0 / 16695.0,
    71.0 / 1920.0,
    -17253.0 / 339200.0,
    22.0 / 525.0,
    -1.0 / 40.0,
];

/// Integrates `sys` from `(t0, y0)` and returns the state at each output time of `ts` (checked
/// by [`super::check_times`]: after `t0`, non-decreasing).
pub fn solve(
    sys: &mut dyn OdeSystem,
    y0: &[f64],
    t0: f64,
    ts: &[f64],
    o: &OdeOptions,
) -> Result<Vec<Vec<f64>>, OdeFailure> {
    let n = sys.dim();
    let mut y = y0.to_vec();
    let mut k: Vec<Vec<f64>> = vec![vec![0.0; n]; 7];
    sys.rhs(t0, &y, &mut k[0])?;
    if !all_finite(&k[0]) {
        return Err(OdeFailure::NonFinite { t: t0 });
    }
    let span = ts.last().map_or(1.0, |&t| t - t0);
    let mut h = initial_step(sys, t0, &y, &k[0].clone(), 5, span, o)?;
    let mut t = t0;
    let mut out = Vec::with_capacity(ts.len());
    let mut ynew = vec![0.0; n];
    let mut stage = vec![0.0; n];
    let mut err = vec![0.0; n];
    for &target in ts {
        let mut steps = 0u64;
        let mut rejected_last = false;
        while t < target {
            if steps >= o.max_num_steps {
                return Err(OdeFailure::MaxSteps { t, target });
            }
            steps += 1;
            let clipped = t + h >= target;
            let hs = if clipped { target - t } else { h };
            if hs <= 16.0 * f64::EPSILON * t.abs().max(1.0) && !clipped {
                return Err(OdeFailure::StepTooSmall { t, h: hs });
            }
            for s in 1..7 {
                for i in 0..n {
                    let mut acc = y[i];
                    for j in 0..s {
                        acc += hs * A[s][j] * k[j][i];
                    }
                    stage[i] = acc;
                }
                sys.rhs(t + C[s] * hs, &stage, &mut k[s])?;
                if s == 6 {
                    ynew.copy_from_slice(&stage);
                }
            }
            for i in 0..n {
                err[i] = hs * (0..7).map(|j| E[j] * k[j][i]).sum::<f64>();
            }
            let en = if all_finite(&ynew) && all_finite(&k[6]) {
                scaled_rms(&err, &y, &ynew, o)
            } else {
                f64::INFINITY
            };
            if en <= 1.0 {
                t = if clipped { target } else { t + hs };
                y.copy_from_slice(&ynew);
                k.swap(0, 6);
                let grow = if en == 0.0 {
                    10.0
                } else {
                    (0.9 * en.powf(-0.2)).clamp(0.2, 10.0)
                };
                let grow = if rejected_last { grow.min(1.0) } else { grow };
                h = if clipped { h.max(hs * grow) } else { hs * grow };
                rejected_last = false;
            } else {
                if !en.is_finite() && hs < 1e-12 * t.abs().max(1.0) {
                    return Err(OdeFailure::NonFinite { t });
                }
                let shrink = if en.is_finite() {
                    (0.9 * en.powf(-0.2)).max(0.2)
                } else {
                    0.1
                };
                h = hs * shrink;
                rejected_last = true;
            }
        }
        out.push(y.clone());
    }
    Ok(out)
}
