#include "compare/first_divergence.h"

#include <string>

namespace lockstep {

namespace {

// The report order of findings: what caused what. A changed input first,
// then the data (by batch), then training (by step; within a step the
// learning rate the step used, the loss, the per-parameter and global
// gradient norms, the gradients' digest, the parameter norm, the
// parameters' digest), then the contract, structure, final
// hashes and resources. A finding without an index goes after those with one.
int section_rank(Section s) {
  switch (s) {
    case Section::kInput: return 0;
    case Section::kData: return 1;
    case Section::kTrain: return 2;
    case Section::kContract: return 3;
    case Section::kStructure: return 4;
    case Section::kHashes: return 5;
    case Section::kResources: return 6;
  }
  return 7;
}

int metric_rank(const std::string& subject) {
  if (subject == "lr") return 0;
  if (subject == "loss") return 1;
  if (subject.rfind("grad_norm/", 0) == 0) return 2;
  if (subject == "grad_norm") return 3;
  if (subject == "digests.grads") return 4;  // the gradients' bytes, before the update
  if (subject == "param_norm") return 5;
  if (subject == "digests.params") return 6;
  return 7;
}

}  // namespace

bool causal_order(const Finding& a, const Finding& b) {
  if (section_rank(a.section) != section_rank(b.section)) return section_rank(a.section) < section_rank(b.section);
  auto at = [](const Finding& f) { return f.index < 0 ? INT64_MAX : f.index; };
  if (at(a) != at(b)) return at(a) < at(b);
  if (a.section == Section::kTrain && metric_rank(a.subject) != metric_rank(b.subject))
    return metric_rank(a.subject) < metric_rank(b.subject);
  return false;  // stable: the order they were found in
}

namespace {

// Where the values first moved: data first, then training; within a
// section the earliest index; for training, the parameter whose gradient
// norm went first. "" when nothing but inputs differ.
std::string first_value_divergence(const Verdict& v) {
  for (Section s : {Section::kData, Section::kTrain, Section::kContract, Section::kStructure, Section::kHashes,
                    Section::kResources}) {
    const Finding* best = nullptr;
    for (const auto& f : v.findings) {
      if (f.section != s) continue;
      if (!best || (f.index >= 0 && (best->index < 0 || f.index < best->index))) best = &f;
    }
    if (!best) continue;
    std::string out = std::string(section_name(s)) + ": " + best->subject;
    if (s == Section::kTrain && best->index >= 0) {
      out = "train step " + std::to_string(best->index) + ": " + best->subject;
      const Finding* param = nullptr;
      for (const auto& f : v.findings)
        if (f.section == Section::kTrain && f.subject.rfind("grad_norm/", 0) == 0 && f.index >= 0 &&
            (!param || f.index < param->index))
          param = &f;
      if (param)
        out += " (first parameter gradient to diverge: " + param->subject.substr(10) + " at step " +
               std::to_string(param->index) + ")";
    } else if (s == Section::kData && best->index >= 0) {
      out = "data batch " + std::to_string(best->index) + ": " + best->subject;
    }
    return out + " — " + best->detail;
  }
  return "";
}

// first_value_divergence(), led by the first divergent module when
// training moved and the module traces say where.
std::string located_divergence(const Verdict& v) {
  std::string moved = first_value_divergence(v);
  if (v.trace.first < 0 || moved.rfind("train step ", 0) != 0) return moved;
  if (moved.find(": module_trace — ") != std::string::npos) return v.trace.summary;  // nothing else moved
  // A module whose forward moved at step s with identical input, and one of
  // whose own parameter gradients moved at an earlier step g while every
  // traced gradient of step g agreed: its backward computed other weight
  // gradients at g. That is the first divergence; say it first.
  const TraceCell& c = v.trace.cells[static_cast<size_t>(v.trace.first)];
  if (c.phase == TracePhase::kForward && c.step > 0 && v.trace.summary.find(": input identical") != std::string::npos) {
    const Finding* grad = nullptr;
    for (const auto& f : v.findings)
      if (f.section == Section::kTrain && f.subject.rfind("grad_norm/" + c.module + ".", 0) == 0 && f.index >= 0 &&
          f.index < c.step && (!grad || f.index < grad->index))
        grad = &f;
    bool traced_agree = grad != nullptr;
    for (const auto& cell : v.trace.cells)
      if (grad && cell.step == grad->index && cell.phase == TracePhase::kBackward && cell.state != 0) traced_agree = false;
    if (grad && traced_agree)
      return "train step " + std::to_string(grad->index) + ", backward, " + c.module +
             ": every traced gradient of the step agrees, but its weight gradient moved (" + grad->subject +
             ": the backward of " + c.module + " computed it differently); at train step " + std::to_string(c.step) +
             ", forward, its output differs with identical input (" + v.trace.change + ") — the metrics first moved at " +
             moved;
    if (grad)
      return v.trace.summary + "; its own parameter gradient moved first (" + grad->subject + " at step " +
             std::to_string(grad->index) + ") — the metrics first moved at " + moved;
  }
  return v.trace.summary + " — the metrics first moved at " + moved;
}

}  // namespace

// A changed input first ("input changed: data file ..., xxh3 a → b", and
// where the values first moved because of it), else where the values moved.
std::string first_divergence(const Verdict& v) {
  for (const auto& f : v.findings)
    if (f.section == Section::kInput) {
      std::string moved = located_divergence(v);
      return f.detail + (moved.empty() ? "" : "; the values first moved at " + moved);
    }
  std::string moved = located_divergence(v);
  // Under another contract the values are compared exactly to locate where
  // they moved; the contract is why, said on the same line.
  if (v.lane == Lane::kContractMismatch && !moved.empty() && moved.rfind("contract: ", 0) != 0) {
    std::string why;
    for (const auto& f : v.findings)
      if (f.section == Section::kContract)
        why += (why.empty() ? "" : ", ") + f.subject.substr(9) + " " +
               f.detail.substr(0, f.detail.rfind(": a run is never accepted"));
    moved += " (the " + v.reference_word + " was made under another determinism contract: " + why + ")";
  }
  return moved;
}

}  // namespace lockstep
