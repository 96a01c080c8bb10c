/* Ops: RNN, GRU, LSTM (see op_list.h). */
