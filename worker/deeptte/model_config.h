// DeepTTE hyperparameters (torch-free so flags and checkpoints can share it).
#pragma once

#include <cstdint>
#include <string>

namespace tteps::deeptte {

struct ModelConfig {
  int64_t kernel_size = 3;            // Geo-Conv window, in points
  int64_t num_filter = 32;            // Geo-Conv output channels
  std::string pooling = "attention";  // "attention" | "mean"
  double alpha = 0.1;                 // weight of the local-path loss
  int64_t num_final_fcs = 3;          // residual layers of the entire estimator
  int64_t final_fc_size = 128;        // width of the entire estimator

  // Throws std::invalid_argument naming the bad field.
  void Validate() const;
  std::string ToString() const;
};

// Sizes of the attribute embeddings, as in the paper.
inline constexpr int64_t kNumDrivers = 24000;
inline constexpr int64_t kNumWeekdays = 7;
inline constexpr int64_t kNumTimeSlots = 1440;
inline constexpr int64_t kAttrSize = 16 + 3 + 8 + 1;  // three embeddings + normalised distance
inline constexpr int64_t kHiddenSize = 128;           // LSTM width

}  // namespace tteps::deeptte
