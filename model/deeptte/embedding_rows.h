// DeepTTE's embedding tables that travel by rows (model/row_spans.h), and the rows a set of
// trips uses. The weekday and state tables are small enough to send whole. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "model/data/trips.h"
#include "model/row_spans.h"

namespace tteps::deeptte {

// The tables' parameter names, in the order EmbeddingRows lists their rows.
const std::vector<std::string>& EmbeddingTables();

// The rows of each table that the trips `slices` index into `trips` look up (sorted, unique).
TableRows EmbeddingRows(const data::Trips& trips, const std::vector<std::vector<size_t>>& slices);

}  // namespace tteps::deeptte
