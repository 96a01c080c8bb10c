/* Ops: RNN, GRU, LSTM (see op_list.h). */

/* rnn.c: one-layer recurrent networks */
HC_OP(hc_op_gru)
HC_OP(hc_op_lstm)
HC_OP(hc_op_rnn)
