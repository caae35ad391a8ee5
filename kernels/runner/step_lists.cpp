#include "kernels/runner/step_lists.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace ess::runner {

std::int32_t LatentLayout::row(std::int64_t layer, std::int64_t request, std::int64_t position) const {
  if (layer < 0 || layer >= layers || request < 0 || request >= batch || position < 0 || position >= rows_per_request) {
    throw std::out_of_range("LatentLayout: (layer " + std::to_string(layer) + ", request " + std::to_string(request) +
                            ", position " + std::to_string(position) + ") outside " + std::to_string(layers) + " x " +
                            std::to_string(batch) + " x " + std::to_string(rows_per_request));
  }
  const std::int64_t id = (layer * batch + request) * rows_per_request + position;
  if (id > std::numeric_limits<std::int32_t>::max()) {
    throw std::out_of_range("LatentLayout: row " + std::to_string(id) + " exceeds 32 bits");
  }
  return static_cast<std::int32_t>(id);
}

StepLists build_step_lists(const StepAccess& access, const LatentLayout& layout, std::int64_t top_k) {
  if (static_cast<std::int64_t>(access.layers.size()) != layout.layers) {
    throw std::invalid_argument("build_step_lists: " + std::to_string(access.layers.size()) + " layers, layout has " +
                                std::to_string(layout.layers));
  }
  const auto B = static_cast<std::size_t>(layout.batch);
  const auto K = static_cast<std::size_t>(top_k);
  StepLists out;
  out.layers.resize(access.layers.size());
  for (std::size_t l = 0; l < access.layers.size(); ++l) {
    const auto& requests = access.layers[l];
    if (requests.size() != B) {
      throw std::invalid_argument("build_step_lists: layer " + std::to_string(l) + " has " +
                                  std::to_string(requests.size()) + " requests, layout has " + std::to_string(B));
    }
    LayerLists& lists = out.layers[l];
    const auto reserve = [&](std::size_t count) {
      const std::size_t at = out.data.size();
      out.data.resize(at + count, 0);
      return at;
    };
    lists.selected = reserve(B * K);
    lists.selected_count = reserve(B);
    lists.hits = reserve(B * K);
    lists.hit_count = reserve(B);
    lists.misses = reserve(B * K);
    lists.miss_count = reserve(B);
    std::int64_t fetch_total = 0;
    for (const RequestAccess& r : requests) fetch_total += static_cast<std::int64_t>(r.missed.size());
    lists.fetch = reserve(static_cast<std::size_t>(fetch_total));
    std::size_t fetch_at = lists.fetch;

    for (std::size_t r = 0; r < B; ++r) {
      const RequestAccess& req = requests[r];
      if (req.selected.size() > K) {
        throw std::invalid_argument("build_step_lists: layer " + std::to_string(l) + ", request " + std::to_string(r) +
                                    " selects " + std::to_string(req.selected.size()) + " entries, top_k is " +
                                    std::to_string(K));
      }
      std::size_t n_hits = 0;
      std::size_t n_misses = 0;
      std::size_t m = 0;  // walks req.missed, a subsequence of req.selected (both ascending)
      for (std::size_t i = 0; i < req.selected.size(); ++i) {
        const std::int64_t position = req.selected[i];
        const std::int32_t row = layout.row(static_cast<std::int64_t>(l), static_cast<std::int64_t>(r), position);
        out.data[lists.selected + r * K + i] = row;
        if (m < req.missed.size() && req.missed[m] == position) {
          out.data[lists.misses + r * K + n_misses++] = row;
          out.data[fetch_at++] = row;
          const bool extends = !lists.runs.empty() && m > 0 && req.missed[m - 1] + 1 == position;
          if (extends) {
            ++lists.runs.back().rows;
          } else {
            lists.runs.push_back(CopyRun{row, 1});
          }
          ++m;
        } else {
          out.data[lists.hits + r * K + n_hits++] = row;
        }
      }
      if (m != req.missed.size()) {
        throw std::invalid_argument("build_step_lists: layer " + std::to_string(l) + ", request " + std::to_string(r) +
                                    ": missed position " + std::to_string(req.missed[m]) +
                                    " is not among the selected ones (or not ascending)");
      }
      out.data[lists.selected_count + r] = static_cast<std::int32_t>(req.selected.size());
      out.data[lists.hit_count + r] = static_cast<std::int32_t>(n_hits);
      out.data[lists.miss_count + r] = static_cast<std::int32_t>(n_misses);
      lists.max_selected = std::max(lists.max_selected, static_cast<std::int64_t>(req.selected.size()));
      lists.max_hits = std::max(lists.max_hits, static_cast<std::int64_t>(n_hits));
      lists.max_misses = std::max(lists.max_misses, static_cast<std::int64_t>(n_misses));
    }
    lists.fetch_rows = fetch_total;
  }
  return out;
}

}  // namespace ess::runner
