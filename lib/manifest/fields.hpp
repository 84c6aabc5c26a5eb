// A result's summary, its fields listed once (as io::Table lists a product's columns): each field names
// a member, or a value computed from the result, and the manifest key it is recorded under. A tool
// declares the list beside the stage it runs and records the whole result in one call, instead of
// copying the struct into the manifest line by line.
//
//   const manifest::Fields<Deblended> kSummary = manifest::Fields<Deblended>()
//       .field("n_peaks", &Deblended::n_peaks)
//       .field("n_split_patches", &Deblended::n_split);
//   kSummary.record(builder, result);  // builder.summary("n_peaks", result.n_peaks), ...
#pragma once

#include <phew/manifest/manifest.hpp>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace phew::manifest {

template <typename Result>
class Fields {
 public:
  // A member recorded as it is (a number, a string, a vector of them: anything Json takes).
  template <typename T>
  Fields& field(std::string name, T Result::*member) {
    fields_.push_back({std::move(name), [member](const Result& r) { return Json(r.*member); }, false});
    return *this;
  }
  // A value computed from the result (a difference of two members, a count of a vector).
  Fields& field(std::string name, std::function<Json(const Result&)> value) {
    fields_.push_back({std::move(name), std::move(value), false});
    return *this;
  }

  // A value recorded only when there is one (a property of one kind of result).
  Fields& field_if(std::string name, std::function<std::optional<Json>(const Result&)> value) {
    fields_.push_back(
        {std::move(name), [value = std::move(value)](const Result& r) { return value(r).value_or(Json()); }, true});
    return *this;
  }

  // Another list's fields, each recorded from the part of the result `of` gives (a stage's own summary
  // inside a tool's record of its run), in that list's order.
  template <typename Part, typename Of>  // Of: const Part& (const Result&)
  Fields& fields(const Fields<Part>& part, Of of) {
    for (const auto& f : part.fields_)
      fields_.push_back({f.name, [value = f.value, of](const Result& r) { return value(of(r)); }, f.optional});
    return *this;
  }

  // builder.summary(name, value) for every field, in the order listed.
  void record(Builder& builder, const Result& result) const {
    for (const auto& f : fields_) {
      Json value = f.value(result);
      if (!(f.optional && value.is_null())) builder.summary(f.name, std::move(value));
    }
  }

 private:
  template <typename>
  friend class Fields;
  struct Field {
    std::string name;
    std::function<Json(const Result&)> value;
    bool optional = false;  // field_if: not recorded when null
  };
  std::vector<Field> fields_;
};

}  // namespace phew::manifest
