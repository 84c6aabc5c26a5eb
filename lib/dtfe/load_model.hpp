// The workload model of Rangel et al. Sec. IV C: the time of a field as a function of its particle
// count n, fitted at run time from a few timed fields. Triangulation: t = c n log2 n (ordinary least
// squares, Eq. 15-16); interpolation: t = alpha n^beta (Gauss-Newton, started from a straight-line
// fit in log-log, Eq. 17).
#pragma once

#include <span>

namespace phew::dtfe {

struct TriangulationModel {
  double c = 0;  // seconds per (n log2 n)
  double predict(double n) const;
};

struct PowerLawModel {
  double alpha = 0, beta = 1;
  double predict(double n) const;
};

// Least-squares c through the origin. Samples with n < 2 are ignored; no samples gives c = 0.
TriangulationModel fit_triangulation(std::span<const double> n, std::span<const double> seconds);

// alpha n^beta by Gauss-Newton on the squared residuals of t (not of log t), from the log-log
// line; with fewer than two distinct n, beta = `default_beta` and alpha fits the mean.
PowerLawModel fit_power_law(std::span<const double> n, std::span<const double> seconds,
                            double default_beta = 1.0 / 3.0);

struct WorkloadModel {
  TriangulationModel triangulation;
  PowerLawModel interpolation;
  double predict(double n) const { return triangulation.predict(n) + interpolation.predict(n); }
};

}  // namespace phew::dtfe
