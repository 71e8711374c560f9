//===- Reconvergence.cpp - Where divergent lanes meet again ---------------===//
//
// The classic SIMT rule (as in GPGPU-Sim): a warp that a branch splits runs
// each side in turn and reunites at the branch block's immediate
// post-dominator. The post-dominators come from the usual iterative data
// flow over basic blocks, with one virtual exit after every exit and ret.
//
//===----------------------------------------------------------------------===//

#include "Reconvergence.h"

#include <algorithm>

namespace fwp::emu {
namespace {

bool endsBlock(const Instruction &inst) {
  return inst.op == Opcode::Bra || inst.op == Opcode::Brx ||
         inst.op == Opcode::Exit || inst.op == Opcode::Ret;
}

struct Graph {
  std::vector<int> blockStart;              // first instruction of each block
  std::vector<int> blockOf;                 // instruction -> block
  std::vector<std::vector<int>> successors; // block -> blocks; exit = size
};

Graph buildGraph(const Kernel &kernel) {
  size_t n = kernel.body.size();
  std::vector<bool> leader(n + 1, false);
  leader[0] = true;
  for (size_t i = 0; i < n; ++i) {
    const Instruction &inst = kernel.body[i];
    if (endsBlock(inst))
      leader[i + 1] = true;
    if (inst.op == Opcode::Bra && inst.operands[0].target >= 0)
      leader[size_t(inst.operands[0].target)] = true;
  }
  for (const auto &table : kernel.branchTables)
    for (int target : table)
      leader[size_t(target)] = true;
  Graph g;
  g.blockOf.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (leader[i])
      g.blockStart.push_back(int(i));
    g.blockOf[i] = int(g.blockStart.size()) - 1;
  }
  int blocks = int(g.blockStart.size()), exitNode = blocks;
  g.successors.resize(size_t(blocks));
  for (int b = 0; b < blocks; ++b) {
    int last = (b + 1 < blocks ? g.blockStart[size_t(b) + 1] : int(n)) - 1;
    const Instruction &inst = kernel.body[size_t(last)];
    auto &out = g.successors[size_t(b)];
    bool fallsThrough = true;
    if (inst.op == Opcode::Exit || inst.op == Opcode::Ret) {
      out.push_back(exitNode);
      fallsThrough = inst.guard >= 0;
    } else if (inst.op == Opcode::Bra) {
      out.push_back(g.blockOf[size_t(inst.operands[0].target)]);
      fallsThrough = inst.guard >= 0;
    } else if (inst.op == Opcode::Brx) {
      for (int target : kernel.branchTables[size_t(inst.operands[1].target)])
        out.push_back(g.blockOf[size_t(target)]);
      fallsThrough = inst.guard >= 0;
    }
    if (fallsThrough)
      out.push_back(last + 1 < int(n) ? g.blockOf[size_t(last) + 1] : exitNode);
  }
  return g;
}

} // namespace

std::vector<int> reconvergencePoints(const Kernel &kernel) {
  if (kernel.body.empty())
    return {};
  Graph g = buildGraph(kernel);
  size_t blocks = g.blockStart.size(), nodes = blocks + 1;
  // postDominators[b][d]: d post-dominates b. Start from "all", shrink.
  std::vector<std::vector<bool>> post(nodes, std::vector<bool>(nodes, true));
  post[blocks].assign(nodes, false);
  post[blocks][blocks] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = blocks; b-- > 0;) {
      std::vector<bool> next(nodes, !g.successors[b].empty());
      for (int s : g.successors[b])
        for (size_t d = 0; d < nodes; ++d)
          next[d] = next[d] && post[size_t(s)][d];
      next[b] = true;
      if (next != post[b]) {
        post[b] = std::move(next);
        changed = true;
      }
    }
  }
  std::vector<long> count(nodes);
  for (size_t b = 0; b < nodes; ++b)
    count[b] = std::count(post[b].begin(), post[b].end(), true);
  std::vector<int> blockPoint(blocks, -1);
  for (size_t b = 0; b < blocks; ++b) {
    // The immediate post-dominator is the strict one with the most
    // post-dominators of its own: all of b's but b.
    for (size_t d = 0; d < blocks; ++d)
      if (d != b && post[b][d] && count[d] == count[b] - 1)
        blockPoint[b] = g.blockStart[d];
  }
  std::vector<int> points(kernel.body.size());
  for (size_t i = 0; i < points.size(); ++i)
    points[i] = blockPoint[size_t(g.blockOf[i])];
  return points;
}

} // namespace fwp::emu
