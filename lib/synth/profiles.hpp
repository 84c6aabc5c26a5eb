// Spherical halo profiles (NFW, Plummer, Hernquist): density, enclosed mass and potential, analytic
// where the model allows, with an optional exponential taper beyond a truncation radius r_t
// (Kazantzidis, Magorrian & Moore 2004, ApJ 601, 37):
//
//   rho(r) = rho(r_t) (r / r_t)^eps exp(-(r - r_t) / r_d)   for r > r_t,
//   eps    = r_t rho'(r_t)/rho(r_t) + r_t / r_d             (the logarithmic slope is continuous),
//
// which keeps the mass finite and the distribution function positive (a sharp cut would make the
// Eddington f(E) negative near the edge). Units are any consistent set; phew uses kpc, 1e10 Msun, km/s.
#pragma once

#include <string>
#include <vector>

namespace phew::synth {

enum class ProfileModel { nfw, plummer, hernquist };

std::string to_string(ProfileModel m);

struct ProfileSpec {
  ProfileModel model = ProfileModel::plummer;
  // NFW: the characteristic mass M_s = 4 pi rho_s r_s^3, so M(<r) = M_s [ln(1+x) - x/(1+x)];
  // Plummer, Hernquist: the total mass of the untapered model.
  double mass = 1;
  double scale_radius = 1;       // r_s (NFW) or a (Plummer, Hernquist)
  double truncation_radius = 0;  // r_t; 0 = untapered (not allowed for NFW, whose mass diverges)
  double decay_radius = 0;       // r_d of the taper (> 0 when r_t > 0)
  double G = 1;                  // gravitational constant in the units of the other quantities
};

// NFW halo of mass m200 within r200, where the mean density is `overdensity` times `critical_density`,
// concentration c = r200 / r_s, tapered from truncation * r200 with decay radius decay * r_t.
ProfileSpec nfw_from_m200(double m200, double concentration, double critical_density, double overdensity,
                          double truncation, double decay, double G);
double nfw_r200(double m200, double critical_density, double overdensity);  // (3 m200 / (4 pi Delta rho_c))^(1/3)

class Profile {
 public:
  // Throws Error(usage) when the parameters are not positive and finite.
  explicit Profile(const ProfileSpec& spec);

  const ProfileSpec& spec() const { return spec_; }
  double density(double r) const;
  // d ln(rho)/dr and its derivative d^2 ln(rho)/dr^2. At r = r_t, `outside` picks the taper's side.
  void log_slopes(double r, bool outside, double& s, double& ds) const;
  double enclosed_mass(double r) const;  // M(<r), exact (analytic inside r_t, 8-point Gauss-Legendre beyond)
  double potential(double r) const;      // Phi(r) <= 0, zero at infinity, finite at r = 0
  double total_mass() const { return total_mass_; }
  // Inverse of enclosed_mass: the radius holding mass m (0 <= m < total_mass), to ~1e-14 relative.
  double radius_of_mass(double m) const;
  double half_mass_radius() const { return radius_of_mass(0.5 * total_mass_); }
  // The radius range tables use: from 1e-6 scale radii to where 1 - M(<r)/M_total < 1e-13.
  double inner_radius() const { return inner_; }
  double outer_radius() const { return outer_; }
  double taper_exponent() const { return eps_; }  // eps (0 when untapered)

 private:
  double rho_inner(double r) const;
  double mass_inner(double r) const;
  double phi_inner(double r) const;
  void slopes_inner(double r, double& s, double& ds) const;
  double mass_inner_inverse(double m) const;                  // analytic for Plummer, Hernquist; Newton for NFW
  double tail_integral(double a, double b, int power) const;  // int_a^b rho r^power dr (Gauss-Legendre)
  double solve_radius(double m, double lo, double hi) const;

  ProfileSpec spec_;
  bool tapered_ = false;
  double rho_t_ = 0, eps_ = 0, mass_t_ = 0, phi_shift_ = 0, total_mass_ = 0;
  double inner_ = 0, outer_ = 0;
  std::vector<double> tail_r_, tail_m_, tail_q_;  // nodes beyond r_t: radius, M(<r), int_r^inf rho r dr
};

}  // namespace phew::synth
