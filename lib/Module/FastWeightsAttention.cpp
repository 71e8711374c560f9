//===- FastWeightsAttention.cpp - The seeds' module as a C++ class --------===//

#include "fwp/FastWeightsAttention.h"
#include "fwp/Support/Random.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace fwp {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

std::string str(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", v);
  return buffer;
}

[[noreturn]] void invalid(const std::string &message) {
  throw std::invalid_argument("FastWeightsAttention: " + message);
}

void fillUniform(std::vector<float> &v, int64_t count, double bound,
                 SplitMix64 &rng) {
  v.resize(count);
  for (float &e : v)
    e = static_cast<float>(rng.uniform(bound));
}

/// seqLen * batch * dModel, refusing negative sizes and overflow.
int64_t activationCount(const char *call, int64_t seqLen, int64_t batch,
                        int64_t dModel) {
  if (seqLen < 0 || batch < 0)
    invalid(std::string(call) + ": seq_len and batch must be >= 0, got " +
            "seq_len=" + str(seqLen) + " batch=" + str(batch));
  const int64_t max = std::numeric_limits<int64_t>::max();
  if (seqLen != 0 && batch > max / seqLen)
    invalid(std::string(call) + ": seq_len * batch overflows");
  int64_t rows = seqLen * batch;
  if (rows != 0 && dModel > max / rows)
    invalid(std::string(call) + ": seq_len * batch * d_model overflows");
  return rows * dModel;
}

std::string shape(int64_t seqLen, int64_t batch, int64_t dModel) {
  return "[seq_len=" + str(seqLen) + ", batch=" + str(batch) +
         ", d_model=" + str(dModel) + "]";
}

} // namespace

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

const std::array<const char *, 6> &FastWeightsAttention::Parameters::names() {
  static const std::array<const char *, 6> kNames = {"w_q",    "w_k", "w_v",
                                                     "w_beta", "w_o", "b_o"};
  return kNames;
}

const std::vector<float> &
FastWeightsAttention::Parameters::operator[](const std::string &name) const {
  if (name == "w_q")
    return wQ;
  if (name == "w_k")
    return wK;
  if (name == "w_v")
    return wV;
  if (name == "w_beta")
    return wBeta;
  if (name == "w_o")
    return wO;
  if (name == "b_o")
    return bO;
  invalid("no parameter named '" + name +
          "'; the parameters are w_q, w_k, w_v, w_beta, w_o, b_o");
}

std::vector<float> &
FastWeightsAttention::Parameters::operator[](const std::string &name) {
  return const_cast<std::vector<float> &>(
      static_cast<const Parameters &>(*this)[name]);
}

//===----------------------------------------------------------------------===//
// FastWeightsAttention
//===----------------------------------------------------------------------===//

FastWeightsAttention::FastWeightsAttention(int64_t heads, int64_t dModel,
                                           DPFP phi, double dropoutProb,
                                           FastWeightsAttentionOptions options)
    : heads_(heads), dModel_(dModel), phi_(phi), dropoutProb_(dropoutProb),
      options_(options) {
  if (heads < 1)
    invalid("heads must be >= 1, got " + str(heads));
  if (dModel < 1)
    invalid("d_model must be >= 1, got " + str(dModel));
  if (dModel % heads != 0)
    invalid("heads (" + str(heads) + ") must divide d_model (" + str(dModel) +
            ")");
  const int64_t dHead = dModel / heads;
  if (phi.nu < 1 || phi.nu > 2 * dHead - 1)
    invalid("DPFP nu must be in [1, 2*d_k-1] = [1, " + str(2 * dHead - 1) +
            "] for d_k = d_model/heads = " + str(dHead) + ", got " +
            str(phi.nu));
  if (!std::isfinite(phi.eps) || !(phi.eps > 0))
    invalid("DPFP eps must be finite and > 0, got " + str(phi.eps));
  if (!(dropoutProb >= 0 && dropoutProb < 1))
    invalid("dropout_prob must be in [0, 1), got " + str(dropoutProb));
  if (options.chunkSize < 1 || options.chunkSize > jit::kMaxChunkSize)
    invalid("chunk size must be in [1, " + str(jit::kMaxChunkSize) + "], got " +
            str(options.chunkSize));
  // Anything the checks above missed (the JIT's own limits).
  kernelDesc().validate();

  // nn.Linear(in, out).reset_parameters(): kaiming_uniform_(a=sqrt(5)) gives
  // U(-1/sqrt(in), 1/sqrt(in)) for the weight, and the bias is drawn from the
  // same range. Every layer here has in = d_model. One stream, in the order
  // of Parameters::names().
  const double bound = 1.0 / std::sqrt(static_cast<double>(dModel));
  SplitMix64 rng(options.seed);
  fillUniform(params_.wQ, dModel * dModel, bound, rng);
  fillUniform(params_.wK, dModel * dModel, bound, rng);
  fillUniform(params_.wV, dModel * dModel, bound, rng);
  fillUniform(params_.wBeta, heads * dModel, bound, rng);
  fillUniform(params_.wO, dModel * dModel, bound, rng);
  fillUniform(params_.bO, dModel, bound, rng);
}

jit::KernelDesc FastWeightsAttention::kernelDesc() const {
  jit::KernelDesc desc;
  desc.rule = options_.rule;
  desc.nu = phi_.nu;
  desc.eps = phi_.eps;
  desc.heads = heads_;
  desc.dHead = dHead();
  desc.dtype = jit::DType::F32;
  desc.chunkSize = options_.chunkSize;
  desc.backend = options_.backend;
  return desc;
}

std::shared_ptr<const jit::CompiledAttention>
FastWeightsAttention::kernel() const {
  if (!kernel_)
    kernel_ = jit::compile(kernelDesc());
  return kernel_;
}

void FastWeightsAttention::checkParameterSizes(const char *call) const {
  const int64_t d = dModel_;
  const std::pair<const char *, int64_t> expected[] = {
      {"w_q", d * d},         {"w_k", d * d}, {"w_v", d * d},
      {"w_beta", heads_ * d}, {"w_o", d * d}, {"b_o", d}};
  for (const auto &[name, count] : expected) {
    const std::vector<float> &p = params_[name];
    if (static_cast<int64_t>(p.size()) != count)
      throw std::logic_error(std::string("FastWeightsAttention: ") + call +
                             ": parameter " + name + " has " +
                             std::to_string(p.size()) + " elements, expected " +
                             str(count));
  }
}

std::vector<float> FastWeightsAttention::forward(const std::vector<float> &x,
                                                 int64_t seqLen,
                                                 int64_t batch) {
  const int64_t count = activationCount("forward", seqLen, batch, dModel_);
  if (static_cast<int64_t>(x.size()) != count)
    invalid("forward: x has " + std::to_string(x.size()) +
            " elements, expected " + shape(seqLen, batch, dModel_) + " = " +
            str(count));
  checkParameterSizes("forward");

  std::vector<float> y(count);
  const Parameters &p = params_;
  kernel()->forward(seqLen, batch, x.data(), p.wQ.data(), p.wK.data(),
                    p.wV.data(), p.wBeta.data(), p.wO.data(), p.bO.data(),
                    y.data());

  savedX_ = x;
  savedParams_ = params_;
  savedSeqLen_ = seqLen;
  savedBatch_ = batch;
  haveForward_ = true;
  return y;
}

FastWeightsAttention::Gradients
FastWeightsAttention::backward(const std::vector<float> &dy) const {
  if (!haveForward_)
    throw std::logic_error("FastWeightsAttention: backward called without a "
                           "forward: run forward(x, seq_len, batch) first");
  const int64_t count =
      activationCount("backward", savedSeqLen_, savedBatch_, dModel_);
  if (static_cast<int64_t>(dy.size()) != count)
    invalid("backward: dy has " + std::to_string(dy.size()) +
            " elements, expected the shape of the last forward's y, " +
            shape(savedSeqLen_, savedBatch_, dModel_) + " = " + str(count));

  const Parameters &p = savedParams_;
  Gradients g;
  g.x.resize(count);
  Parameters &dp = g.parameters;
  dp.wQ.resize(p.wQ.size());
  dp.wK.resize(p.wK.size());
  dp.wV.resize(p.wV.size());
  dp.wBeta.resize(p.wBeta.size());
  dp.wO.resize(p.wO.size());
  dp.bO.resize(p.bO.size());
  kernel()->backward(savedSeqLen_, savedBatch_, savedX_.data(), p.wQ.data(),
                     p.wK.data(), p.wV.data(), p.wBeta.data(), p.wO.data(),
                     p.bO.data(), dy.data(), g.x.data(), dp.wQ.data(),
                     dp.wK.data(), dp.wV.data(), dp.wBeta.data(), dp.wO.data(),
                     dp.bO.data());
  return g;
}

void FastWeightsAttention::sgdStep(const Parameters &gradients,
                                   float learningRate) {
  for (const char *name : Parameters::names()) {
    std::vector<float> &p = params_[name];
    const std::vector<float> &g = gradients[name];
    if (g.size() != p.size())
      invalid(std::string("sgdStep: gradient of ") + name + " has " +
              std::to_string(g.size()) + " elements, expected " +
              std::to_string(p.size()));
    for (std::size_t i = 0; i < p.size(); ++i)
      p[i] -= learningRate * g[i];
  }
}

} // namespace fwp
