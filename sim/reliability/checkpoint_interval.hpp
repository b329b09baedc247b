// The classic answers to "how often should I checkpoint", for Poisson failures of mean time
// between failures M, a checkpoint costing C and a restart costing R:
//   Young (1974), "A first order approximation to the optimum checkpoint interval", CACM 17(9):
//     tau = sqrt(2 C M);
//   Daly (2006), "A higher order estimate of the optimum checkpoint interval for restart dumps",
//     FGCS 22(3): tau = sqrt(2 C M) [1 + sqrt(C / 2M) / 3 + (C / 2M) / 9] - C   (C < 2M; else M),
//   and the expected wall time of one segment of tau training + C checkpoint, failures striking
//   anywhere (restarts included): M e^{R/M} (e^{(tau + C)/M} - 1), whence the goodput
//   tau / (M e^{R/M} (e^{(tau + C)/M} - 1)).
// The Monte Carlo (goodput_model.hpp) must agree with the last where its assumptions hold; the
// interval sweep (goodput_estimate.hpp) is compared with the first two.
#pragma once

#include "common/units.hpp"

namespace tandem::sim::reliability {

Seconds young_interval_s(Seconds checkpoint_s, Seconds mtbf_s);
Seconds daly_interval_s(Seconds checkpoint_s, Seconds mtbf_s);
double daly_goodput(Seconds interval_s, Seconds checkpoint_s, Seconds restart_s, Seconds mtbf_s);

}  // namespace tandem::sim::reliability
