// Scalars from TensorBoard event files (TFRecord framing, tfrecord.h; Event
// protobufs, tensorboard.proto), as torch.utils.tensorboard, tensorboardX
// and tf.summary write them.
//
//   MetricsSpec spec;
//   spec.format = MetricsFormat::kTensorBoard;
//   spec.path = "runs/exp1";                        // folder or one file
//   spec.series = {{"loss", "train/loss"}};
//   auto series = read_tensorboard_metrics(spec);   // same as read_metrics(spec)
//
// A scalar is a Summary.Value's simple_value (float32) or a scalar tensor
// (every dimension 1) of DT_FLOAT or DT_DOUBLE, from float_val/double_val
// or little-endian tensor_content. Anything else under a requested tag is
// exit 2. Files are merged by step (series_builder.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ingest/metrics.h"

namespace lockstep {

/// `path` itself when it is a file, else the regular files of folder
/// `path` whose name starts with "events.out.tfevents." (not recursive),
/// sorted by name. Throws exit-2 Error naming the path when it does not
/// exist or the folder holds no event file.
std::vector<std::string> tensorboard_event_files(const std::string& path);

/// read_metrics for MetricsFormat::kTensorBoard.
std::map<std::string, Series> read_tensorboard_metrics(const MetricsSpec& spec);

}  // namespace lockstep
