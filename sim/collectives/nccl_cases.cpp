#include "sim/collectives/nccl_cases.hpp"

#include <algorithm>
#include <filesystem>

#include "common/yaml_reader.hpp"

namespace tandem::sim {

namespace fs = std::filesystem;

Cluster NcclCase::load_cluster() const {
  if (cluster.find('/') == std::string::npos && cluster.find(".yaml") == std::string::npos) return find_cluster(cluster);
  return ::tandem::load_cluster((fs::path(file).parent_path() / cluster).string());
}

NcclCase load_nccl_case(const std::string& path) {
  const YamlNode root = YamlNode::load_file(path);
  root.only_keys({"name", "cluster", "collective", "bytes", "group_size", "algorithm",
                  "published_bus_bandwidth_gb_per_s", "band_pct", "source", "hardware", "note"});
  NcclCase c;
  c.file = path;
  c.name = root.str("name");
  c.cluster = root.str("cluster");
  const YamlNode kind = root["collective"];
  const std::string k = kind.as_string();
  if (k == "all_reduce") c.collective = OpKind::all_reduce;
  else if (k == "all_gather") c.collective = OpKind::all_gather;
  else if (k == "reduce_scatter") c.collective = OpKind::reduce_scatter;
  else if (k == "broadcast") c.collective = OpKind::broadcast;
  else kind.fail("must be all_reduce, all_gather, reduce_scatter or broadcast, got '" + k + "'");
  c.bytes = root["bytes"].positive();
  const YamlNode group = root["group_size"];
  c.group_size = static_cast<int>(group.positive_int());
  if (c.group_size < 2) group.fail("must be 2 or more");
  if (auto algorithm = root.get("algorithm")) {
    try {
      c.algorithm = parse_collective_algorithm(algorithm->as_string());
    } catch (const std::invalid_argument& e) {
      algorithm->fail(e.what());
    }
  }
  c.published_bus_gb_per_s = root["published_bus_bandwidth_gb_per_s"].positive();
  c.band_pct = root.positive_or("band_pct", 5);
  c.source = root.str("source");
  c.hardware = root.str_or("hardware", "");
  c.note = root.str_or("note", "");
  return c;
}

std::vector<std::string> nccl_case_files(const std::string& dir) {
  const fs::path folder = dir.empty() ? fs::path(bundled_dir("validation")) / "nccl" : fs::path(dir);
  std::vector<std::string> files;
  if (!fs::is_directory(folder)) return files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace tandem::sim
