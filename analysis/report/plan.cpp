#include "analysis/report/plan.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "analysis/format.hpp"
#include "analysis/iteration_view.hpp"
#include "analysis/report/charts.hpp"
#include "analysis/report/html.hpp"
#include "analysis/report/svg.hpp"
#include "common/duration_text.hpp"

namespace tandem::report {

namespace {

constexpr double kCharPx = 6.4;  // about one character of 11 px text

std::string list_of(const std::vector<int>& values) {
  // "0-3" for a contiguous run, "0, 2, 5" otherwise.
  if (values.empty()) return "-";
  if (values.back() - values.front() + 1 == static_cast<int>(values.size()))
    return values.size() == 1 ? std::to_string(values.front())
                              : std::to_string(values.front()) + "-" + std::to_string(values.back());
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

std::string nodes_text(const PlanGroup& g) {
  if (g.first_node < 0) return "-";
  return g.first_node == g.last_node ? std::to_string(g.first_node)
                                     : std::to_string(g.first_node) + "-" + std::to_string(g.last_node);
}

std::string sequences_text(const PlanGroup& g) {
  if (g.sequences_min < 0) return "-";
  return g.sequences_min == g.sequences_max ? std::to_string(g.sequences_min)
                                            : std::to_string(g.sequences_min) + "-" + std::to_string(g.sequences_max);
}

std::string share_text(double share) { return share < 0 ? "-" : printf_string("%.1f %%", 100 * share); }

// Columns of boxes, one row per device group: where each group's stages sit in the model (box
// width in proportion to the stage's layers) and the group's share of the batch.
std::string plan_picture(const PlanSummary& plan) {
  constexpr double kWidth = 880, kLabelPx = 230, kStagesEnd = 700, kShareStart = 720, kShareBarPx = 90;
  constexpr double kHeaderPx = 24, kRowPx = 34;
  const double height = kHeaderPx + kRowPx * static_cast<double>(plan.groups.size()) + 6;
  Svg svg(kWidth, height, "plan: stages and batch shares per device group");
  svg.text(4, 14, "device group", "start", 11, "#555");
  svg.text(kLabelPx, 14, "pipeline stages (width in proportion to layers)", "start", 11, "#555");
  svg.text(kShareStart, 14, "batch share", "start", 11, "#555");
  // Stage s starts where the layers of stages before it end, the same in every row.
  const int stages = std::max(1, plan.stages);
  std::vector<double> weight(static_cast<std::size_t>(stages), 1.0);
  for (int s = 0; s < stages && s < static_cast<int>(plan.layers_of_stage.size()); ++s)
    if (plan.layers_of_stage[static_cast<std::size_t>(s)] > 0) weight[static_cast<std::size_t>(s)] = plan.layers_of_stage[static_cast<std::size_t>(s)];
  double total = 0;
  std::vector<double> start;
  for (double w : weight) start.push_back(total), total += w;
  const double stage_px = (kStagesEnd - kLabelPx) / total;
  std::map<std::string, int> colour_of_device;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    const PlanGroup& g = plan.groups[i];
    const double top = kHeaderPx + kRowPx * static_cast<double>(i);
    const int colour = colour_of_device.try_emplace(g.device, static_cast<int>(colour_of_device.size())).first->second;
    std::string label = g.device + " · " + std::to_string(g.ranks) + " devices";
    if (label.size() * kCharPx > kLabelPx - 10) label = g.device;
    svg.text(4, top + kRowPx / 2 + 4, label, "start", 11);
    std::vector<int> held = g.stages.empty() ? std::vector<int>{0} : g.stages;
    for (int s : held) {
      if (s < 0 || s >= stages) continue;
      const double x = kLabelPx + stage_px * start[static_cast<std::size_t>(s)];
      const double w = stage_px * weight[static_cast<std::size_t>(s)];
      const int layers = s < static_cast<int>(plan.layers_of_stage.size()) ? plan.layers_of_stage[static_cast<std::size_t>(s)] : -1;
      const std::string full = "stage " + std::to_string(s) + (layers >= 0 ? " · " + std::to_string(layers) + " layers" : "");
      svg.rect(x + 1, top + 4, w - 2, kRowPx - 8, palette_colour(colour), g.group + ": " + full);
      for (const std::string& text : {full, "s" + std::to_string(s) + (layers >= 0 ? " · " + std::to_string(layers) : ""),
                                      std::to_string(s)})
        if (text.size() * kCharPx + 8 < w) {
          svg.text(x + w / 2, top + kRowPx / 2 + 4, text, "middle", 11, "#fff");
          break;
        }
    }
    if (g.batch_share >= 0) {
      svg.rect(kShareStart, top + 9, kShareBarPx * g.batch_share, kRowPx - 18, palette_colour(colour),
               g.group + ": " + share_text(g.batch_share) + " of the batch");
      svg.text(kShareStart + kShareBarPx + 6, top + kRowPx / 2 + 4, share_text(g.batch_share), "start", 11);
    }
  }
  return svg.str();
}

std::vector<std::vector<std::string>> group_rows(const PlanSummary& plan) {
  std::vector<std::vector<std::string>> rows;
  for (const PlanGroup& g : plan.groups) {
    std::string layers;
    for (int s : g.stages)
      if (s < static_cast<int>(plan.layers_of_stage.size()) && plan.layers_of_stage[static_cast<std::size_t>(s)] >= 0)
        layers += (layers.empty() ? "" : " | ") + std::to_string(plan.layers_of_stage[static_cast<std::size_t>(s)]);
    rows.push_back({g.group, g.device, std::to_string(g.ranks),
                    nodes_text(g), list_of(g.stages),
                    layers.empty() ? "all" : layers, std::to_string(g.replicas.size()), sequences_text(g),
                    share_text(g.batch_share)});
  }
  return rows;
}

// Per device group and collective (kind, group size): ops, bytes and busy time per rank in one
// iteration of the trace; groups in the plan's order (by first rank).
std::string collectives_table(const Trace& iteration, const std::vector<TraceRank>& ranks, const PlanSummary& plan) {
  struct Totals {
    long long ops = 0;
    double bytes = 0, busy_s = 0;
  };
  // Group names by index: the plan's, then "all ranks" for ranks the trace's list leaves out.
  std::vector<std::string> names;
  std::map<std::string, std::size_t> order;
  auto index_of = [&](const std::string& name) {
    auto [it, added] = order.try_emplace(name, names.size());
    if (added) names.push_back(name);
    return it->second;
  };
  for (const PlanGroup& g : plan.groups) index_of(g.group);
  std::map<std::tuple<std::size_t, OpKind, int>, Totals> totals;
  std::map<std::size_t, std::set<int>> ranks_of_group;
  for (const auto& r : iteration.records) {
    const std::size_t group = index_of(r.rank < static_cast<int>(ranks.size())
                                           ? ranks[static_cast<std::size_t>(r.rank)].group
                                           : std::string("all ranks"));
    ranks_of_group[group].insert(r.rank);
    if (!is_communication(r.kind)) continue;
    Totals& t = totals[{group, r.kind, r.kind == OpKind::send || r.kind == OpKind::recv ? 2 : r.group_size}];
    ++t.ops, t.bytes += r.bytes, t.busy_s += r.end_s - r.start_s;
  }
  if (totals.empty()) return "";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [key, t] : totals) {
    const auto& [group, kind, size] = key;
    const double n = static_cast<double>(ranks_of_group[group].size());
    rows.push_back({names[group], to_string(kind), std::to_string(size),
                    printf_string("%.1f", static_cast<double>(t.ops) / n), human_bytes(t.bytes / n),
                    human_seconds(t.busy_s / n)});
  }
  return "<h3>Collectives per device group (one iteration, per rank)</h3>" +
         html_table({"device group", "collective", "ranks in its group", "ops", "bytes", "busy time"}, rows);
}

// "#2 (name) is 3.9 % slower, mostly exposed communication (+53.8 ms); ..." for the runners-up.
std::string winner_comparison(const SearchResults& search) {
  std::vector<const SearchCandidate*> feasible;
  for (const auto& c : search.candidates)
    if (c.fits_in_memory.value_or(true)) feasible.push_back(&c);
  if (feasible.size() < 2) return "";
  const SearchCandidate& best = *feasible.front();
  auto headroom = [](const SearchCandidate& c) -> std::string {
    if (!c.peak_memory_bytes || !c.memory_capacity_bytes) return "-";
    return human_bytes(*c.memory_capacity_bytes - *c.peak_memory_bytes);
  };
  auto optional_seconds = [](const std::optional<double>& v) { return v ? human_seconds(*v) : std::string("-"); };
  std::vector<std::vector<std::string>> rows;
  std::string sentences;
  for (std::size_t i = 0; i < std::min<std::size_t>(4, feasible.size()); ++i) {
    const SearchCandidate& c = *feasible[i];
    const double slower = best.iteration_time_s > 0 ? c.iteration_time_s / best.iteration_time_s - 1 : 0;
    rows.push_back({"#" + std::to_string(c.rank), c.strategy, human_seconds(c.iteration_time_s),
                    i == 0 ? "winner" : printf_string("+%.1f %%", 100 * slower), optional_seconds(c.compute_s),
                    optional_seconds(c.exposed_comm_s), optional_seconds(c.idle_s),
                    c.peak_memory_bytes ? human_bytes(*c.peak_memory_bytes) : "-", headroom(c)});
    if (i == 0 || !c.compute_s || !best.compute_s || !c.exposed_comm_s || !best.exposed_comm_s || !c.idle_s ||
        !best.idle_s)
      continue;
    const std::pair<double, const char*> parts[] = {{*c.compute_s - *best.compute_s, "compute"},
                                                    {*c.exposed_comm_s - *best.exposed_comm_s, "exposed communication"},
                                                    {*c.idle_s - *best.idle_s, "idle time (pipeline bubble, waiting)"}};
    const auto* most = std::max_element(std::begin(parts), std::end(parts));
    sentences += "<li>" + escape_html("#" + std::to_string(c.rank) + " (" + c.strategy + ") is " +
                                      printf_string("%.1f %%", 100 * slower) + " slower, mostly " + most->second + " (" +
                                      (most->first >= 0 ? "+" : "") + human_seconds(most->first) +
                                      " per iteration); memory headroom " + headroom(c) + " vs the winner's " +
                                      headroom(best) + ".") +
                 "</li>";
  }
  std::vector<BarRow> bars;
  for (std::size_t i = 0; i < std::min<std::size_t>(4, feasible.size()); ++i) {
    const SearchCandidate& c = *feasible[i];
    if (c.compute_s && c.exposed_comm_s && c.idle_s)
      bars.push_back({"#" + std::to_string(c.rank), {*c.compute_s, *c.exposed_comm_s, *c.idle_s},
                      human_seconds(c.iteration_time_s)});
  }
  const std::string chart =
      bars.empty() ? std::string()
                   : legend_html({{"compute", 0}, {"exposed communication", 1}, {"idle", 2}}) +
                         stacked_bar_chart("Winner and runners-up: where the iteration goes",
                                           {"compute", "exposed communication", "idle"}, bars, human_seconds);
  return "<h3>Why the winner wins</h3><ul class=\"plan-why\">" + sentences + "</ul>" + chart +
         html_table({"rank", "strategy", "iteration", "vs winner", "compute", "exposed comm", "idle", "peak memory",
                     "headroom"},
                    rows);
}

std::string heterogeneity_text(const SearchResults& search) {
  if (!search.heterogeneity) return "";
  const HeterogeneityComparison& h = *search.heterogeneity;
  auto value = [&](const std::optional<double>& v) {
    if (!v) return std::string("-");
    if (search.objective == "time") return human_seconds(*v);
    if (search.objective == "time_to_train") return format_duration(*v);
    return printf_string("%.4g", *v);
  };
  return html_paragraph(std::string("Heterogeneity gain: the best heterogeneity-aware plan ") +
                            (h.gain_percent >= 0 ? "beats" : "loses to") + " the best uniform one by " +
                            printf_string("%.1f %%", std::abs(h.gain_percent)) + " (" + search.objective + " " +
                            value(h.aware_objective) + " vs " + value(h.uniform_objective) + "): " + h.aware + " vs " +
                            h.uniform + ".",
                        "plan-gain");
}

}  // namespace

PlanSummary plan_summary(const std::vector<TraceRank>& ranks) {
  PlanSummary plan;
  plan.ranks = static_cast<int>(ranks.size());
  struct Sets {
    std::set<int> stages, replicas;
  };
  std::vector<Sets> sets;
  std::map<std::string, std::size_t> index;
  std::map<int, long long> sequences_of_replica;
  std::map<int, int> layers_of_stage;
  std::set<int> stages, replicas;
  for (const TraceRank& r : ranks) {
    auto [it, added] = index.try_emplace(r.group, plan.groups.size());
    if (added) {
      PlanGroup group;
      group.group = r.group, group.device = r.device;
      plan.groups.push_back(std::move(group));
      sets.emplace_back();
    }
    PlanGroup& g = plan.groups[it->second];
    ++g.ranks;
    if (r.node >= 0) {
      g.first_node = g.first_node < 0 ? r.node : std::min(g.first_node, r.node);
      g.last_node = std::max(g.last_node, r.node);
    }
    if (r.stage >= 0) {
      sets[it->second].stages.insert(r.stage), stages.insert(r.stage);
      if (r.layers >= 0) layers_of_stage.try_emplace(r.stage, r.layers);
    }
    if (r.replica >= 0) {
      sets[it->second].replicas.insert(r.replica), replicas.insert(r.replica);
      if (r.sequences >= 0) sequences_of_replica.try_emplace(r.replica, r.sequences);
    }
    if (r.sequences >= 0) {
      g.sequences_min = g.sequences_min < 0 ? r.sequences : std::min(g.sequences_min, r.sequences);
      g.sequences_max = std::max(g.sequences_max, r.sequences);
    }
  }
  plan.stages = static_cast<int>(stages.size());
  plan.replicas = static_cast<int>(replicas.size());
  for (const auto& [replica, sequences] : sequences_of_replica) plan.sequences += sequences;
  if (!stages.empty()) {
    plan.layers_of_stage.assign(static_cast<std::size_t>(*stages.rbegin() + 1), -1);
    for (const auto& [stage, layers] : layers_of_stage) plan.layers_of_stage[static_cast<std::size_t>(stage)] = layers;
  }
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    PlanGroup& g = plan.groups[i];
    g.stages.assign(sets[i].stages.begin(), sets[i].stages.end());
    g.replicas.assign(sets[i].replicas.begin(), sets[i].replicas.end());
    if (plan.sequences > 0 && !g.replicas.empty()) {
      long long mine = 0;
      for (int replica : g.replicas) {
        auto found = sequences_of_replica.find(replica);
        if (found != sequences_of_replica.end()) mine += found->second;
      }
      g.batch_share = static_cast<double>(mine) / static_cast<double>(plan.sequences);
    }
  }
  return plan;
}

std::string plan_in_words(const PlanSummary& plan) {
  if (plan.groups.empty()) return "";
  std::string words = std::to_string(plan.ranks) + " devices";
  if (plan.groups.size() > 1) words += " in " + std::to_string(plan.groups.size()) + " device groups";
  words += ": ";
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    const PlanGroup& g = plan.groups[i];
    words += (i == 0 ? "" : i + 1 == plan.groups.size() ? " and " : ", ") + std::to_string(g.ranks) + " " + g.device +
             " (group " + g.group + (g.first_node >= 0 ? ", nodes " + nodes_text(g) : "") + ")";
  }
  words += ". ";
  if (plan.stages > 1) {
    std::string layers;
    for (int l : plan.layers_of_stage) layers += (layers.empty() ? "" : " | ") + (l >= 0 ? std::to_string(l) : "?");
    words += "The model is cut into " + std::to_string(plan.stages) + " pipeline stages (layers per stage: " + layers + ")";
    for (const PlanGroup& g : plan.groups)
      if (plan.groups.size() > 1) words += "; " + g.group + " holds stage" + (g.stages.size() > 1 ? "s " : " ") + list_of(g.stages);
    words += ". ";
  } else if (plan.stages == 1) {
    words += "Every replica holds the whole model (no pipeline). ";
  }
  if (plan.replicas > 0 && plan.stages > 0) {
    const int width = plan.ranks / (plan.replicas * plan.stages);
    if (width > 1) words += "Each stage of a replica runs on " + std::to_string(width) + " devices (tensor or context parallel). ";
    words += std::to_string(plan.replicas) + " data-parallel replica" + (plan.replicas > 1 ? "s" : "");
    if (plan.sequences > 0) {
      words += " share the " + std::to_string(plan.sequences) + " sequences of an iteration";
      std::string shares;
      for (const PlanGroup& g : plan.groups)
        if (g.sequences_min >= 0)
          shares += (shares.empty() ? ": " : "; ") + g.device + " (" + g.group + ") replicas take " + sequences_text(g) +
                    " each, " + share_text(g.batch_share) + " of the batch";
      words += shares;
    }
    words += ".";
  }
  return words;
}

std::string plan_section(const ReportInputs& in) {
  const Trace* trace = in.predicted_trace && !in.predicted_trace->ranks.empty() ? &*in.predicted_trace
                       : in.measured_trace && !in.measured_trace->ranks.empty() ? &*in.measured_trace
                                                                               : nullptr;
  std::string body;
  if (in.prediction && !in.prediction->strategy.empty())
    body += html_paragraph("Strategy: " + in.prediction->strategy +
                           (in.prediction->model.empty() ? "" : " (model " + in.prediction->model + ")") + ".");
  if (trace) {
    const PlanSummary plan = plan_summary(trace->ranks);
    body += html_paragraph(plan_in_words(plan), "plan-words");
    body += plan_picture(plan);
    body += "<h3>Device groups</h3>" +
            html_table({"device group", "device", "ranks", "nodes", "stages", "layers per stage", "replicas",
                        "sequences per replica", "batch share"},
                       group_rows(plan));
    body += collectives_table(median_iteration(*trace), trace->ranks, plan);
  }
  if (in.search) body += heterogeneity_text(*in.search) + winner_comparison(*in.search);
  if (body.empty()) return "";
  return html_section("plan", "Plan", body);
}

}  // namespace tandem::report
